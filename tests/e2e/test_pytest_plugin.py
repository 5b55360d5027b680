"""The pytest plugin, through real inner pytest sessions (pytester, in subprocesses): the entry point loads it,
`--envcheck` gates the session, and `@pytest.mark.envcheck` skips tests with the finding's summary as reason."""

from __future__ import annotations

import textwrap

import pytest
from _fakes import build_facts, dist_dict

from envcheck import pytest_plugin

pytest_plugins = ["pytester"]

TESTS = '''
import pathlib

def test_runs(tmp_path_factory):
    pathlib.Path("RAN").write_text("yes")
'''


def _project(pytester: pytest.Pytester, policy: str = "", tests: str = TESTS) -> None:
    """A project: pyproject.toml with [tool.envcheck] (when `policy` is given) and a test module."""
    if policy:
        pytester.makepyprojecttoml(f"[tool.envcheck]\n{textwrap.dedent(policy)}")
    pytester.makepyfile(test_project=textwrap.dedent(tests))


def test_plugin_is_inert_without_the_option(pytester: pytest.Pytester) -> None:
    """Installed but not asked for, the plugin changes nothing: an unmet policy does not stop the tests."""
    _project(pytester, 'require = ["no-such-dist-x>=1"]')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["plugins: *envcheck-ml-*"])  # loaded through the pytest11 entry point
    result.stdout.no_fnmatch_line("envcheck: *")  # and silent


def test_failing_check_stops_the_session_before_any_test(pytester: pytest.Pytester) -> None:
    """--envcheck with an unmet requirement exits 1 before the first test, naming the rule, summary and command
    once; pytest's own exit line is one line."""
    _project(pytester, 'require = ["no-such-dist-x>=1"]')
    result = pytester.runpytest_subprocess("--envcheck", "-p", "no:cacheprovider")
    assert result.ret == 1
    assert not (pytester.path / "RAN").exists()
    result.stderr.fnmatch_lines([
        "envcheck found 1 problem at --fail-on error in this environment; no test was run",
        "  EC9901 project-require-no-such-dist-x: the project requires no-such-dist-x>=1; found no-such-dist-x "
        "(not installed)",
        "      fix: Install no-such-dist-x>=1 into the checked environment.",
        "      $ * -m pip install 'no-such-dist-x>=1'",
        "Run `envcheck` for the full report*",
        "Exit: envcheck: the environment fails the check (1 problem at --fail-on error); no test was run",
    ])
    output = result.stdout.str() + result.stderr.str()
    assert output.count("EC9901 project-require-no-such-dist-x") == 1
    assert output.count("Run `envcheck` for the full report") == 1


def test_passing_check_runs_the_tests_and_says_so_in_the_header(pytester: pytest.Pytester) -> None:
    """--envcheck with a met policy runs the session; the header carries the tally and the tier."""
    _project(pytester, 'require = ["pytest>=7"]\nforbid = ["no-such-dist-x"]')
    result = pytester.runpytest_subprocess("--envcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "RAN").exists()
    result.stdout.fnmatch_lines(["envcheck: *passed* (static) — *"])


def test_fail_on_from_the_project_and_from_the_option(pytester: pytest.Pytester) -> None:
    """The project's fail-on applies; --envcheck-fail-on overrides it."""
    _project(pytester, 'require = ["no-such-dist-x"]\nfail-on = "never"')
    assert pytester.runpytest_subprocess("--envcheck", "-p", "no:cacheprovider").ret == 0
    stopped = pytester.runpytest_subprocess("--envcheck", "--envcheck-fail-on", "error", "-p", "no:cacheprovider")
    assert stopped.ret == 1


def test_bad_configuration_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A broken [tool.envcheck] under --envcheck is pytest's usage error (exit 4) with envcheck's one line."""
    _project(pytester, 'requires = ["torch"]')
    result = pytester.runpytest_subprocess("--envcheck", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: envcheck: */pyproject.toml: key 'tool.envcheck.requires': unknown key "
                                 "(did you mean 'require'?)"])


def test_probes_only_with_envcheck_probes(pytester: pytest.Pytester) -> None:
    """A must-pass probe is skipped (unknown) in the static tier, so the session runs; --envcheck-probes runs it,
    and without torch here the sdpa probe cannot pass, so the session stops."""
    _project(pytester, 'probes-must-pass = ["sdpa"]')
    assert pytester.runpytest_subprocess("--envcheck", "-p", "no:cacheprovider").ret == 0
    probed = pytester.runpytest_subprocess("--envcheck", "--envcheck-probes", "-p", "no:cacheprovider")
    if probed.ret == 0:
        pytest.skip("this environment has a working torch: the sdpa probe passes")
    assert probed.ret == 1
    probed.stderr.fnmatch_lines(["  EC9985 project-probe-sdpa: the project needs the sdpa probe to pass; it ended *"])


MARKED = '''
import pytest

@pytest.mark.envcheck(require="pytest>=7")
def test_met():
    pass

@pytest.mark.envcheck(require=["no-such-dist-x>=1", "pytest"])
def test_unmet_requirement():
    raise AssertionError("must have been skipped")

@pytest.mark.envcheck(forbid="pytest")
def test_forbidden():
    raise AssertionError("must have been skipped")

@pytest.mark.envcheck("always-fires")
def test_rule_fires():
    raise AssertionError("must have been skipped")

@pytest.mark.envcheck("EC9820")
def test_rule_quiet():
    pass

@pytest.mark.envcheck("EC0000")
def test_unknown_rule():
    pass

@pytest.mark.envcheck(probe="sdpaa")
def test_unknown_probe():
    pass

@pytest.mark.envcheck(color="red")
def test_unknown_argument():
    pass

@pytest.mark.envcheck(require="torch>>2")
def test_bad_requirement():
    pass
'''

RULES = '''
[[rule]]
id = "EC9810"
name = "always-fires"
severity = "warning"
summary = "this rule always fires"
why = "w"
fix = "f"
references = ["https://example.org"]
when = { python = ">=3" }

[[rule]]
id = "EC9820"
name = "never-fires"
severity = "error"
summary = "s"
why = "w"
fix = "f"
references = ["https://example.org"]
when = { python = "<3" }
'''


def test_marker_skips_with_the_findings_summary(pytester: pytest.Pytester) -> None:
    """Markers skip when their requirement does not hold (reason: the finding's summary), run when it does, and
    a malformed marker is an error of that test; --strict-markers knows the marker."""
    (pytester.path / "rules").mkdir()
    (pytester.path / "rules" / "mine.toml").write_text(RULES, encoding="utf-8")
    _project(pytester, 'rule-dirs = ["rules"]\nignore = { EC9810 = "a marker may still ask for it" }', MARKED)
    result = pytester.runpytest_subprocess("-rsE", "--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, skipped=3, errors=4)
    result.stdout.fnmatch_lines_random([
        "SKIPPED [[]1[]] test_project.py:7: envcheck EC9901: the project requires no-such-dist-x>=1; found "
        "no-such-dist-x (not installed)",
        "SKIPPED [[]1[]] test_project.py:11: envcheck EC9950: the project forbids pytest, and pytest * is installed",
        "SKIPPED [[]1[]] test_project.py:15: envcheck EC9810: this rule always fires",
        # Each malformed marker errors its own test with one line, no traceback:
        "@pytest.mark.envcheck: no rule 'EC0000' (see `envcheck rule --all`)",
        "@pytest.mark.envcheck: no probe 'sdpaa' (probes: torch-import, *)",
        "@pytest.mark.envcheck: unknown argument 'color' (use rule ids, probe=, require=, forbid=)",
        "@pytest.mark.envcheck: require[[]0[]]: invalid requirement 'torch>>2': *",
    ])


def test_probe_marker_runs_the_probe(pytester: pytest.Pytester) -> None:
    """@pytest.mark.envcheck(probe="sdpa") runs that probe (no --envcheck needed); where it does not pass, the test
    is skipped with how it ended."""
    _project(pytester, tests='''
        import pytest

        @pytest.mark.envcheck(probe="sdpa")
        def test_needs_sdpa():
            pass
    ''')
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    if outcomes.get("passed") == 1:
        pytest.skip("this environment has a working torch: the sdpa probe passes")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * envcheck EC9985: the project needs the sdpa probe to pass; it ended *"])


def test_unmet_reasons_are_computed_once_per_marker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within a session the facts are collected once and each distinct marker is evaluated once (a unit check of
    the session object, on recorded facts)."""
    import envcheck.pipeline.stages as check_module

    session = pytest_plugin._Session(pytest_plugin.Path("/nonexistent-root"))
    calls: list[object] = []

    def fake_gather(rules: object, **kwargs: object) -> object:
        calls.append(rules)
        return build_facts(dists=[dist_dict("torch", "2.5.1")])

    monkeypatch.setattr(check_module, "gather", fake_gather)
    mark = pytest.mark.envcheck(require="torch>=2.6").mark
    first = session.unmet([mark])
    assert first == ["envcheck EC9901: the project requires torch>=2.6; found torch 2.5.1"]
    assert session.unmet([mark]) == first
    assert session.unmet([pytest.mark.envcheck(require="torch>=2.5").mark]) == []
    assert len(calls) == 1
