"""The qla Python package without a GPU: where it finds libqla.so, `python -m
qla`, errors on a bad setup, a JIT compile through the C ABI, the GDN and GLA
kernels through warmup, and qla.fla (test_fla_backend_cpu.py).

    python3 test/python/test_package.py BUILD/compiler/libqla.so VERSION

Each check runs Python in a fresh process from a folder outside the source
tree, with only the environment it names (no QLA_LIBRARY unless given), so
that nothing leaks in from the caller's shell.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "python", "qla")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

check = Checks()


def run(args, pythonpath, cwd, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("QLA_") and k != "PYTHONPATH"}
    e.update(PYTHONPATH=pythonpath, **env)
    p = subprocess.run([sys.executable] + args, cwd=cwd, env=e, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def installed_copy(tmp, name, lib):
    """A copy of python/qla as pip lays it out: site/qla/*.py (+ libqla.so when lib)."""
    site = os.path.join(tmp, name)
    shutil.copytree(PACKAGE, os.path.join(site, "qla"), ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    if lib:
        os.symlink(lib, os.path.join(site, "qla", "libqla.so"))
    return site


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    lib, want_version = os.path.abspath(sys.argv[1]), sys.argv[2]
    tmp = os.path.realpath(tempfile.mkdtemp(prefix="qla-python-test-"))
    try:
        cache = os.path.join(tmp, "cache")
        outside = os.path.join(tmp, "cwd")
        os.mkdir(outside)

        # 1. The installed layout: libqla.so inside the package, no environment.
        site = installed_copy(tmp, "site", lib)
        rc, out, err = run(["-c", "import qla; print(qla.library_path()); print(qla.version())"],
                           site, outside)
        check("installed layout: libqla.so found inside the package, no QLA_LIBRARY",
              rc == 0 and out.split() == [os.path.join(site, "qla", "libqla.so"), want_version], out + err)

        # 2. python -m qla.
        rc, out, err = run(["-m", "qla"], site, outside, QLA_CACHE_DIR=cache)
        lines = out.splitlines()
        check("python -m qla: exit status 0 and seven lines", rc == 0 and len(lines) == 7, out + err)
        expect = [f"QLA {re.escape(want_version)}", "libqla.so: " + re.escape(os.path.join(site, "qla", "libqla.so")),
                  r"NVRTC: \d+\.\d+", "kernel cache: " + re.escape(cache), "prebuilt kernels: none",
                  r"GPU: (yes \(sm_90a\)|no \(.+\))", r"qlac: .+"]
        for pat, line in zip(expect, lines):
            check(f"python -m qla: '{line}' matches {pat}", re.fullmatch(pat, line) is not None)

        # 3. QLA_LIBRARY overrides the package's copy; a wrong one is a clear error.
        other = os.path.join(tmp, "other")
        os.mkdir(other)
        os.symlink(lib, os.path.join(other, "libqla.so"))
        rc, out, err = run(["-c", "import qla; print(qla.library_path()); print(qla.nvrtc_version())"], site,
                           outside, QLA_LIBRARY=os.path.join(other, "libqla.so"))
        check("QLA_LIBRARY overrides the library inside the package",
              rc == 0 and out.splitlines()[:1] == [os.path.join(other, "libqla.so")], out + err)
        rc, out, err = run(["-m", "qla"], site, outside, QLA_LIBRARY="/nonexistent/libqla.so")
        check("QLA_LIBRARY naming a missing file: exit 1 and a message naming it",
              rc == 1 and "QLA_LIBRARY=/nonexistent/libqla.so: no such file" in err, out + err)
        bad = os.path.join(tmp, "not-a-library.so")
        with open(bad, "w") as f:
            f.write("not an ELF file\n")
        rc, out, err = run(["-c", "import qla; qla.version()"], site, outside, QLA_LIBRARY=bad)
        check("QLA_LIBRARY naming a file that is not a library: QlaError 'cannot load'",
              rc != 0 and f"QlaError: cannot load {bad}" in err, out + err)

        # 4. No library anywhere: the error says where it looked and what to do.
        bare = installed_copy(tmp, "bare", None)
        rc, out, err = run(["-m", "qla"], bare, outside)
        check("no libqla.so: exit 1, the places looked at and `pip install .`",
              rc == 1 and os.path.join(bare, "qla", "libqla.so") in err and "pip install ." in err, out + err)
        rc, out, err = run(["-c", "import qla; print('imported')"], bare, outside)
        check("no libqla.so: `import qla` itself still works (the library loads on first use)",
              rc == 0 and out.strip() == "imported", out + err)

        # 5. A JIT compile through ctypes (no GPU needed), and a compile error.
        src = ("kernel axpb<B = 256>(X: f32[N], Y: out f32[N], a: f32)\n"
               "  grid(cdiv(N, B)) threads(128)\n{\n  let i0 = block.x * B\n  frag x: f32[B]\n"
               "  copy X[i0 :+ B] -> x\n  for (i) in parallel(B) { x[i] = x[i] * a + 1.0 }\n"
               "  copy x -> Y[i0 :+ B]\n}\n")
        code = ("import qla, sys\n"
                "k = qla.compile_string(sys.argv[1], 'axpb.qla', B=128)\n"
                "print(k.tensor_names, k.scalar_names, k.cache)\n"
                "print([l for l in k.info.splitlines() if l.startswith('grid')][0])\n"
                "try:\n"
                "    qla.compile_string(sys.argv[1].replace('block.x * B', 'block.x * * B'), 'bad.qla')\n"
                "except qla.QlaError as e:\n"
                "    print(str(e).splitlines()[0])\n")
        rc, out, err = run(["-c", code, src], site, outside, QLA_CACHE_DIR=cache)
        lines = out.splitlines()
        check("compile_string: tensors, scalars, a cache miss in a fresh cache, the define applied",
              rc == 0 and lines[:2] == ["['X', 'Y'] ['a'] miss", "grid cdiv(N,128) 1 1"], out + err)
        check("compile_string on a syntax error: QlaError with bad.qla:4:col: error:",
              len(lines) == 3 and re.match(r"bad\.qla:4:\d+: error: ", lines[2]) is not None, out + err)

        # 6. The GDN operator without torch or a GPU: the forward's and the
        # backward's kernels of one configuration compile (dtypes by name),
        # and a bad name is refused.
        code = ("import qla\n"
                "from qla import gdn\n"
                "gdn.warmup('bf16', 64, 64, g_dtype='bf16', backward=True, dht=True, initial_state=True)\n"
                "print('warm')\n"
                "try:\n"
                "    gdn.warmup('f64', 64, 64)\n"
                "except qla.QlaError as e:\n"
                "    print(e)\n")
        rc, out, err = run(["-c", code], site, outside, QLA_CACHE_DIR=cache)
        lines = out.splitlines()
        check("gdn.warmup (forward and backward kernels) compiles without torch or a GPU",
              rc == 0 and lines[:1] == ["warm"], out + err)
        check("gdn.warmup with a bad dtype name: QlaError naming it",
              len(lines) == 2 and "'f64' is not a dtype name" in lines[1], out + err)

        # The package and the library agree on the GDN ABI (the argument
        # structs' layout); a mismatch is refused with both versions named.
        code = ("import qla\n"
                "from qla import gdn\n"
                "print(gdn.workspace_bytes(1, 4096, 2, 4, 128, 128) > 0)\n"
                "print(gdn._ABI_VERSION)\n"
                "gdn._ABI_VERSION -= 1\n"
                "try:\n"
                "    gdn.workspace_bytes(1, 4096, 2, 4, 128, 128)\n"
                "except qla.QlaError as e:\n"
                "    print(e)\n")
        rc, out, err = run(["-c", code], site, outside, QLA_CACHE_DIR=cache)
        lines = out.splitlines()
        check("gdn.workspace_bytes: the package's and the library's GDN ABI versions match",
              rc == 0 and lines[:1] == ["True"], out + err)
        abi = int(lines[1]) if len(lines) > 1 and lines[1].isdigit() else -1
        check("gdn: a library of another GDN ABI version is refused, naming both",
              len(lines) == 3 and f"has GDN ABI version {abi}; this package needs {abi - 1}" in lines[2], out + err)

        # 6b. python -m qla warmup fills a folder; that folder then serves a
        # fresh process read-only, through $QLA_PREBUILT_DIRS and as
        # prebuilt/ beside libqla.so (a wheel's layout), with its own cache
        # left empty.
        ahead = os.path.join(tmp, "ahead")
        rc, out, err = run(["-m", "qla", "warmup", "--serving", "--head-dim", "64", "--only", "decode", "--jobs", "2",
                            "--cache-dir", ahead], site, outside)
        lines = out.splitlines()
        n_ahead = len([x for x in os.listdir(ahead) if x.endswith(".qlak")]) if os.path.isdir(ahead) else 0
        check("python -m qla warmup --serving --only decode: 4 configurations compiled into --cache-dir",
              rc == 0 and len(lines) == 5 and lines[-1].startswith("4 of 4 configurations") and n_ahead == 4,
              out + err)
        rc, out, err = run(["-m", "qla", "warmup", "--training", "--head-dim", "64", "--only", "Megatron",
                            "--jobs", "1", "--cache-dir", os.path.join(tmp, "train")], site, outside)
        lines = out.splitlines()
        check("python -m qla warmup --training --only Megatron: the forward's and the backward's kernels compiled",
              rc == 0 and lines[-1:] and lines[-1].startswith("1 of 1 configurations")
              and int(re.search(r"(\d+) kernels", lines[-1]).group(1)) >= 10, out + err)
        rc, out, err = run(["-m", "qla", "warmup", "--head-dim", "96"], site, outside)
        check("python -m qla warmup --head-dim 96: exit 2 naming the head dims the kernels take",
              rc == 2 and "head dim 96" in err and "64, 128 or 256" in err, out + err)
        code = ("import os, sys, qla\n"
                "from qla import gdn\n"
                "print(qla.prebuilt_dirs())\n"
                "gdn.warmup_recurrent('bf16', 64, 64, state_dtype='bf16')\n"
                "print(sorted(os.listdir(qla.cache_dir())) if os.path.isdir(qla.cache_dir()) else [])\n")
        empty = os.path.join(tmp, "empty-cache")
        rc, out, err = run(["-c", code], site, outside, QLA_CACHE_DIR=empty, QLA_PREBUILT_DIRS=ahead, QLA_LOG="info")
        check("$QLA_PREBUILT_DIRS: listed, serves the decode kernel (a disk hit), the cache stays empty",
              rc == 0 and out.splitlines() == [str([ahead]), "[]"] and "disk-cache hit" in err, out + err)
        shutil.copytree(ahead, os.path.join(site, "qla", "prebuilt"))
        rc, out, err = run(["-c", code], site, outside, QLA_CACHE_DIR=empty + "2", QLA_LOG="info")
        check("prebuilt/ beside libqla.so: listed, serves the decode kernel, the cache stays empty",
              rc == 0 and out.splitlines() == [str([os.path.join(site, "qla", "prebuilt")]), "[]"]
              and "disk-cache hit" in err, out + err)
        shutil.rmtree(os.path.join(site, "qla", "prebuilt"))

        # 7. The simple-GLA operator (kernels/gla) the same way.
        code = ("import qla\n"
                "from qla import gla\n"
                "assert qla.chunk_simple_gla is gla.chunk_simple_gla\n"
                "gla.warmup('f16', 64, 128, varlen=True, cu_dtype='i64', initial_state=True, output_final_state=True)\n"
                "print('warm')\n"
                "try:\n"
                "    gla.warmup('f32', 64, 64)\n"
                "except qla.QlaError as e:\n"
                "    print(e)\n")
        rc, out, err = run(["-c", code], site, outside, QLA_CACHE_DIR=cache)
        lines = out.splitlines()
        check("gla.warmup compiles without torch or a GPU", rc == 0 and lines[:1] == ["warm"], out + err)
        check("gla.warmup with an unsupported dtype: QlaError naming it",
              len(lines) == 2 and "warmup: dtype f32 is not bf16 or f16" in lines[1], out + err)

        # 8. qla.fla (QLA as FLA's backend) without torch, FLA or a GPU: its
        # own script (the verifier's decisions, the dispatch code of FLA 0.6,
        # 0.5 and the newest fla-core over stand-ins; their wheels are fetched
        # into the fla-wheels folder of lib's build tree).
        script = os.path.join(ROOT, "test", "python", "test_fla_backend_cpu.py")
        p = subprocess.run([sys.executable, script, lib], capture_output=True, text=True, timeout=240,
                           env={k: v for k, v in os.environ.items()
                                if not k.startswith("QLA_") and not k.startswith("FLA_")})
        print(p.stdout.rstrip().replace("\n", "\n  "))
        check("qla.fla: test/python/test_fla_backend_cpu.py", p.returncode == 0, p.stderr[-2000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
