"""Placeholders in a rule's summary, why, fix and commands: `{python}`, `{item.KEY}`, `{plan.KEY}`, `{NAME.version}`.

Commands are argv lists: each element is filled in on its own, so a value with spaces stays one argument, and the
shell-quoted form shown to the user (`shlex.join`) is exactly what `envcheck fix` would run. The engine then plans
torch-family installs (envcheck/remedy/commands/planner.py) and writes every command for the environment's installer
(`{python} -m pip ...` becomes `uv pip ...` in a uv venv; see envcheck/remedy/commands/installers.py), so every report
and `envcheck fix` show the same, runnable commands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from envcheck.facts.snapshot import Facts
from envcheck.support.patterns import lazy

PLACEHOLDER = lazy(r"\{([^{}]*)\}")
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_FORMS = (
    lazy(r"python"),  # the checked interpreter's executable
    lazy(r"python\.version"),
    lazy(r"torch\.(cuda|hip)"),  # torch's build, from torch/version.py
    lazy(r"\*?item\.\w+"),  # a field of the current item of a `foreach` rule; `*` splits it into arguments
    lazy(r"\*?plan\.\w+"),  # a field of a rule's `plan` (the install that fixes it), in `fix` and `commands`
    lazy(r"driver\.(version|cuda)"),  # the NVIDIA driver (NVML)
    lazy(r"probe\.[a-z0-9-]+\.(status|error_class|message)"),  # a live probe's result
    lazy(rf"{_NAME}\.version"),  # the imported version of a distribution
)
NOT_INSTALLED = "(not installed)"


def placeholders(text: str) -> list[str]:
    """The placeholders in `text`; `{{` and `}}` are literal braces."""
    return PLACEHOLDER.findall(text.replace("{{", "").replace("}}", ""))


def invalid_placeholder(name: str, item_fields: Iterable[str] | None,
                        plan_fields: Iterable[str] | None = None) -> str | None:
    """Why `{name}` cannot be used in a rule (None when it can). `item_fields` is None outside `foreach` rules;
    `plan_fields` is None outside a rule's `fix` and `commands`, or where the rule has no `plan`."""
    if not any(form.fullmatch(name) for form in _FORMS):
        return (f"unknown placeholder {{{name}}} (use {{python}}, {{NAME.version}}, {{torch.cuda}}, "
                f"{{driver.version}}, {{probe.NAME.message}}, {{item.KEY}} or {{plan.KEY}})")
    for prefix, fields, needs in (("item", item_fields, "a rule with 'foreach'"),
                                  ("plan", plan_fields, "the 'fix' and 'commands' of a rule with 'plan'")):
        if name.startswith((f"{prefix}.", f"*{prefix}.")):
            key = name.partition(".")[2]
            if fields is None:
                return f"{{{name}}} is only available in {needs}"
            if key not in fields:
                return f"{{{name}}}: {prefix}s have no key {key!r} (they have: {', '.join(fields)})"
    return None


def _value(name: str, facts: Facts, item: dict[str, str] | None, plan: dict[str, str] | None) -> str:
    if name == "python":
        return facts.python.executable
    if name == "python.version":
        return facts.python.version
    if name.startswith(("item.", "*item.")) and item is not None:
        return item.get(name.partition(".")[2], "")
    if name.startswith(("plan.", "*plan.")):
        return "" if plan is None else plan.get(name.partition(".")[2], "")
    if name.startswith("driver."):
        nvml = facts.nvml
        if nvml is None:
            return "unknown"
        return (nvml.driver_version if name == "driver.version" else nvml.cuda_driver_version) or "unknown"
    if name.startswith("probe."):
        _, probe, key = name.split(".")
        result = facts.probes.get(probe)
        return "not run" if result is None else str(getattr(result, key) or "")
    if name in ("torch.cuda", "torch.hip"):
        build = facts.torch
        value = None if build is None else getattr(build, name[6:])
        return value or "none"
    dist = facts.active(name[: -len(".version")])
    return dist.version if dist is not None else NOT_INSTALLED


def _states(name: str, facts: Facts, item: dict[str, str] | None) -> bool:
    """Whether the facts (or the item) state `{name}`'s value, rather than leave it to a stand-in ("unknown",
    "none", "(not installed)", ""). A plan's placeholders count as stated: without a plan a rule shows its
    `fix_without_plan` and writes no command that needs one."""
    if name in ("python", "python.version"):
        return name == "python" or bool(facts.python.version)
    if name.startswith(("item.", "*item.")):
        return item is not None and bool(item.get(name.partition(".")[2]))
    if name.startswith(("plan.", "*plan.")):
        return True
    if name.startswith("driver."):
        nvml = facts.nvml
        return nvml is not None and bool(nvml.driver_version if name == "driver.version" else nvml.cuda_driver_version)
    if name.startswith("probe."):
        return name.split(".")[1] in facts.probes
    if name in ("torch.cuda", "torch.hip"):
        build = facts.torch
        return build.problem is None if build is not None else facts.absence_known("torch")
    dist_name = name[: -len(".version")]
    return facts.active(dist_name) is not None or facts.absence_known(dist_name)


def stated(text: str, facts: Facts, item: dict[str, str] | None = None) -> bool:
    """Whether every placeholder of `text` is a value the facts state: a finding made from error output alone
    (envcheck/rules/engine.py) shows a rule's own text only then, rather than with blanks and stand-ins in it."""
    return all(_states(name, facts, item) for name in placeholders(text))


def render(text: str, facts: Facts, item: dict[str, str] | None = None, plan: dict[str, str] | None = None) -> str:
    def sub(match: re.Match[str]) -> str:
        return _value(match.group(1), facts, item, plan)

    # Protect doubled braces, substitute, then restore them as single literal braces.
    protected = text.replace("{{", "\0").replace("}}", "\1")
    return PLACEHOLDER.sub(sub, protected).replace("\0", "{").replace("\1", "}")


_SPLIT = lazy(r"\{\*(?:item|plan)\.\w+\}")
_PLANNED = lazy(r"\{\*?plan\.\w+\}")


def render_argv(argv: Iterable[str], facts: Facts, item: dict[str, str] | None = None,
                plan: dict[str, str] | None = None) -> tuple[str, ...] | None:
    """The argv filled in. An argument that is exactly `{*item.KEY}` (or `{*plan.KEY}`) becomes one argument per
    whitespace-separated word of the value (a computed list of requirements); when it has none, there is nothing to
    run: None. A command that names the plan, where there is none, is not written either: None."""
    out: list[str] = []
    for arg in argv:
        if plan is None and _PLANNED.search(arg.replace("{{", "")):
            return None
        if _SPLIT.fullmatch(arg):
            words = render(arg, facts, item, plan).split()
            if not words:
                return None
            out.extend(words)
        else:
            out.append(render(arg, facts, item, plan))
    return tuple(out)


def render_argvs(argvs: Iterable[Iterable[str]], facts: Facts, item: dict[str, str] | None = None,
                 plan: dict[str, str] | None = None) -> tuple[tuple[str, ...], ...]:
    """A rule's commands filled in; a command whose `{*item.KEY}` argument is empty, or that names a plan where there
    is none, is left out (nothing to run)."""
    rendered = (render_argv(argv, facts, item, plan) for argv in argvs)
    return tuple(argv for argv in rendered if argv is not None)
