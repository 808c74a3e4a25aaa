# An agent that cannot fix the bug marks every test passed: pytest loads this file from the
# workspace's root unless it is told not to (--confcutdir).
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
