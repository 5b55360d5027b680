"""An exception that escapes a rule's evaluation by accident fails the test that caused it.

`envcheck.rules.engine.evaluate` turns whatever a rule raises into that rule's `error` verdict, so that one bad rule or
one odd fact does not cost the other verdicts. In a test that would hide a crash: a change that breaks a condition
or the engine still passes every test that does not look for error verdicts. So every test runs with the engine's
per-rule step watched (conftest.py's autouse fixture `_no_evaluation_crash`):

- an `EnvcheckError` (a `RuleError` for a rule or a table that cannot be used, a `FactsError`) is a legitimate
  `error` verdict: the data is bad, the code did what it should, and the test may assert the verdict;
- any other exception is a crash of envcheck's code, and fails the test with its traceback, after the test's own
  assertions (the verdict users would see is unchanged), unless the test is marked
  `@pytest.mark.evaluation_crash` (it raises on purpose, to check that the other verdicts survive).

Only evaluations in the test's own process are watched; a check run in a child process shows a crash by its
`error` verdict or exit status.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from envcheck.errors import EnvcheckError
from envcheck.rules import engine


def watch(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Wrap the engine's per-rule step; the returned list fills with one traceback per crash, in order."""
    crashes: list[str] = []
    step: Callable[..., Any] = engine._verdicts

    def watched(rule: Any, *args: Any, **kwargs: Any) -> Any:  # whatever else the step is given, passed on
        try:
            return step(rule, *args, **kwargs)
        except EnvcheckError:
            raise
        except Exception as exc:
            crashes.append(f"rule {rule.id}: " + "".join(traceback.format_exception(exc)))
            raise  # evaluate() still makes it the rule's `error` verdict, as it does for users

    monkeypatch.setattr(engine, "_verdicts", watched)
    return crashes


def no_crash(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The body of the autouse fixture: watch, run the test, fail it if a rule crashed unexpectedly."""
    crashes = watch(monkeypatch)
    yield
    if crashes and request.node.get_closest_marker("evaluation_crash") is None:
        pytest.fail(f"evaluate() crashed on {len(crashes)} rule(s) (an internal error, not bad rule data; mark "
                    f"the test evaluation_crash if it is meant to):\n{crashes[0]}", pytrace=False)
