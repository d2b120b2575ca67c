"""The PASS/FAIL lines and the exit status of the Python tests in this folder.

    from checks import Checks
    check = Checks()
    check("name", condition, detail)   # prints PASS/FAIL (and the detail on failure)
    return check.summary()             # prints ALL PASS / N FAILED; 0 or 1
"""


class Checks:
    def __init__(self):
        self.failures = 0

    def __call__(self, name, ok, detail=""):
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
        if not ok:
            self.failures += 1
            if detail:
                print("        " + str(detail).replace("\n", "\n        "))

    def summary(self) -> int:
        print("ALL PASS" if self.failures == 0 else f"{self.failures} FAILED")
        return 1 if self.failures else 0
