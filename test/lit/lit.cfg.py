# lit configuration of QLA's IR, pass and front-end tests. Loaded through the
# generated lit.site.cfg.py (build/test/lit), which sets the tool paths.
import os

import lit.formats

config.name = "QLA"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".qla"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.test_source_root = os.path.dirname(__file__)
if not hasattr(config, "qla_lit_obj_root"):
    lit_config.fatal("run lit on the build directory (build/test/lit), not on the sources")
config.test_exec_root = config.qla_lit_obj_root


def tool(path):
    if not os.path.exists(path):
        lit_config.fatal("missing tool %s (build qla-opt and qlac first: ninja check-lit)" % path)
    return path


# FileCheck, not, count... come from the LLVM installation.
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
# Quiet, deterministic MLIR diagnostics.
config.environment["LC_ALL"] = "C"

# Substitutions are regular expressions applied to RUN lines in order. The
# tool names must not match inside a path or a longer word (e.g. `not` in
# `--annotate`), hence the look-arounds.
def word(name):
    return r"(?<![\w/.%-])" + name + r"(?![\w/.-])"

config.substitutions.append(("%qla-opt", tool(config.qla_opt)))
config.substitutions.append(("%qlac", tool(config.qlac)))
config.substitutions.append(("%src_root", config.qla_src_root))
config.substitutions.append((word("FileCheck"), tool(os.path.join(config.llvm_tools_dir, "FileCheck"))))
config.substitutions.append((word("not"), tool(os.path.join(config.llvm_tools_dir, "not"))))
config.substitutions.append((word("count"), tool(os.path.join(config.llvm_tools_dir, "count"))))

# The host C++ compiler (CMAKE_CXX_COMPILER), for tests that run emitted
# device code on the CPU with stand-ins for the CUDA built-ins.
host_cxx = getattr(config, "host_cxx", "")
if host_cxx and os.path.exists(host_cxx):
    config.available_features.add("host-cxx")
    config.substitutions.append(("%host_cxx", host_cxx))
