"""checks.py — what the Python test scripts share: running a command and
counting checks, with "N passed, N failed" printed last (tests/run.sh reads
that line). A script in tests/DIR/ imports it after putting tests/ on its
path:

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from checks import check, run, summary
"""
import subprocess

passed = failed = 0


def run(cmd, env=None, timeout=None):
    """(exit code, stdout, stderr) of cmd, as text; exit code -999 when it
    ran past timeout seconds (None: no limit)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -999, "", "timeout"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check(ok, what, detail=""):
    """Counts one check; a failed one is printed with (the start of) detail."""
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL %s %s" % (what, str(detail)[:3000]))


def summary():
    """Prints the counts; the script's exit code (1 when a check failed)."""
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0
