"""Project policy as rules: every declaration of a Config becomes a generated Rule.

A project says what it needs (`require`, `forbid`, GPU minimums, probes that must pass); this module writes each
declaration as a rule in the reserved id range EC99xx, with its condition in the same condition language the rule
pack uses (`missing`, `package`, `gpu`, `probe`). The engine, the three-valued logic (no GPU facts -> skipped, not
passed), `--select`/`--ignore`, every reporter and `envcheck fix` then treat the project's policy exactly like the
shipped rules; nothing downstream knows the difference. Ids are positional within a key's sub-range:

    EC9901-EC9949 require    EC9950-EC9979 forbid    EC9980-EC9982 GPU minimums    EC9985-EC9999 probes-must-pass
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envcheck.errors import ConfigError, EnvcheckError
from envcheck.rules import registry
from envcheck.rules.conditions import ALWAYS, parse
from envcheck.rules.model import Rule, Severity
from envcheck.sources.project.config import Config, requirement_problem

if TYPE_CHECKING:
    from envcheck.rules.policy_declared import Declared

RESERVED = registry.POLICY  # ids in this range belong to project policy; the rule pack never uses them
AREA = "project"
DOCS = "https://github.com/envcheck-ml/envcheck#project-policy"
_FIRST_ID = {"require": 9901, "forbid": 9950, "gpu": 9980, "probes-must-pass": 9985}
_LAST_ID = {"require": 9949, "forbid": 9979, "gpu": 9984, "probes-must-pass": 9999}
# forbid = ["numpy>=2"] is fixed by installing the complement of its one clause: numpy<2.
_COMPLEMENT = {">=": "<", ">": "<=", "<": ">=", "<=": ">", "==": "!=", "!=": "=="}
_NOT_OK = ["error", "crashed", "timeout", "skipped"]  # every probe status but "ok"


def _lit(text: str) -> str:
    """`text` as literal template text: braces doubled so that a URL requirement cannot look like a placeholder."""
    return text.replace("{", "{{").replace("}", "}}")


def _declared(config: Config, key: str, extra: Sequence[str], option: str) -> list[Declared]:
    items: list[Declared] = []
    if not getattr(config, key.replace("-", "_")) and not extra:
        return items  # nothing declared: the class is never defined (most checks declare nothing)
    from envcheck.rules.policy_declared import Declared

    for i, text in enumerate(getattr(config, key.replace("-", "_"))):
        where = f"{config.key(key)}[{i}] in {config.file}"
        items.append(Declared(Requirement(text), text, config.file or "<configuration>", where))
    for text in extra:
        problem = requirement_problem(text)
        if problem:
            raise EnvcheckError(f"{option}: {problem}")
        items.append(Declared(Requirement(text), text, "<command line>", f"{option} on the command line"))
    return items


def _ids(kind: str, count: int, config: Config) -> list[str]:
    first, last = _FIRST_ID[kind], _LAST_ID[kind]
    if count > last - first + 1:
        raise config.error(kind, f"at most {last - first + 1} entries (policy rules of '{kind}' have ids "
                                 f"EC{first}-EC{last}); got {count}")
    return [f"EC{first + i}" for i in range(count)]


def _names(prefix: str, reqs: Iterable[Declared]) -> list[str]:
    seen: dict[str, int] = {}
    names = []
    for d in reqs:
        base = f"{prefix}-{canonicalize_name(d.requirement.name)}"
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return names


def _rule(rule_id: str, name: str, file: str, *, summary: str, why: str, fix: str, when: object,
          **shape: Any) -> Rule:
    """A generated rule that always applies and fires `when` (a condition table; None: always, as for each item
    of a `foreach`). `shape` sets the rest where it differs: `commands` (argv lists; default none), `severity`
    (default error), `foreach`, `references` (default: docs/policy.md)."""
    from envcheck.rules.conditions.where import Where  # only where a rule is generated: most checks generate none

    commands: Sequence[Sequence[str]] = shape.pop("commands", ())
    return Rule(id=rule_id, name=name, severity=shape.pop("severity", Severity.ERROR), summary=summary, why=why,
                fix=fix, commands=tuple(tuple(c) for c in commands),
                references=tuple(shape.pop("references", (DOCS,))), applies=ALWAYS,
                when=ALWAYS if when is None else parse(when, Where(file, rule_id, "when")),
                foreach=shape.pop("foreach", None), area=AREA, file=file, **shape)


# What envcheck/rules/generated.py builds its generated rules (EC98xx) with: the same rule shape and
# literal quoting.
generated_rule = _rule
literal = _lit


def _bare(req: Requirement) -> str:
    """The requirement without its marker: the rule fires only where the marker holds, so pip need not see it."""
    copy = Requirement(str(req))
    copy.marker = None
    return str(copy)


def _ranged(req: Requirement) -> str:
    return f" in the range {_lit(str(req.specifier))}" if req.specifier else ""


def _require_rules(config: Config, extra: Sequence[str]) -> list[Rule]:
    declared = _declared(config, "require", extra, "--require")
    out = []
    for rule_id, name, d in zip(_ids("require", len(declared), config), _names("project-require", declared),
                                declared, strict=True):
        dist = d.requirement.name
        out.append(_rule(
            rule_id, name, d.file,
            summary=f"the project requires {_lit(d.text)}; found {dist} {{{dist}.version}}",
            why=f"Declared in {_lit(d.where)}: the project needs {dist} installed{_ranged(d.requirement)}.",
            fix=f"Install {_lit(_bare(d.requirement))} into the checked environment.",
            when={"missing": d.text},
            commands=[["{python}", "-m", "pip", "install", _lit(_bare(d.requirement))]],
        ))
    return out


def _forbid_rules(config: Config, extra: Sequence[str]) -> list[Rule]:
    declared = _declared(config, "forbid", extra, "--forbid")
    out = []
    for rule_id, name, d in zip(_ids("forbid", len(declared), config), _names("project-forbid", declared),
                                declared, strict=True):
        req = d.requirement
        dist = req.name
        clauses = list(req.specifier)
        if not clauses:
            fix = f"Uninstall {dist}."
            commands = [["{python}", "-m", "pip", "uninstall", "-y", dist]]
        elif len(clauses) == 1 and clauses[0].operator in _COMPLEMENT:
            allowed = f"{dist}{_COMPLEMENT[clauses[0].operator]}{clauses[0].version}"
            fix = f"Install a version of {dist} outside {req.specifier} ({allowed}), or uninstall it."
            commands = [["{python}", "-m", "pip", "install", _lit(allowed)]]
        else:
            fix = f"Install a version of {dist} outside {req.specifier}, or uninstall it."
            commands = []
        out.append(_rule(
            rule_id, name, d.file,
            summary=f"the project forbids {_lit(d.text)}, and {dist} {{{dist}.version}} is installed",
            why=f"Declared in {_lit(d.where)}: the project does not work with {dist} installed"
                f"{_ranged(d.requirement)}.",
            fix=_lit(fix), when={"package": d.text}, commands=commands,
        ))
    return out


def _gpu_rules(config: Config) -> list[Rule]:
    file = config.file or "<configuration>"
    every = "every GPU" if config.gpu_match == "all" else "a GPU"
    where = f"Declared in {_lit(str(config.file))}"
    out = []
    if config.gpu_min_capability is not None:
        cc = config.gpu_min_capability
        out.append(_rule(
            "EC9980", "project-gpu-capability", file,
            summary=f"the project needs {every} of compute capability {cc} or newer",
            why=f"{where} ({config.key('gpu-min-capability')}). Kernels the project uses (bf16, FlashAttention, "
                f"FP8, ...) need this GPU generation; no GPU at all fails it too.",
            fix=f"Run on a machine whose GPUs have compute capability {cc} or newer.",
            when={"not": {"gpu": {"capability": f">={cc}", "match": config.gpu_match}}},
        ))
    if config.gpu_min_memory_gib is not None:
        gib = f"{config.gpu_min_memory_gib:f}".rstrip("0").rstrip(".")  # 24.0 -> "24", never "1e+06"
        out.append(_rule(
            "EC9981", "project-gpu-memory", file,
            summary=f"the project needs {every} with at least {gib} GiB of memory",
            why=f"{where} ({config.key('gpu-min-memory-gib')}). Compared with the total memory NVML reports, in "
                f"GiB with one decimal; no GPU at all fails it too.",
            fix=f"Run on a machine whose GPUs have at least {gib} GiB of memory.",
            when={"not": {"gpu": {"memory_gib": f">={gib}", "match": config.gpu_match}}},
        ))
    if config.gpu_count is not None:
        out.append(_rule(
            "EC9982", "project-gpu-count", file,
            summary=f"the project needs the number of GPUs to be {config.gpu_count}",
            why=f"{where} ({config.key('gpu-count')}). NVML counts every GPU of the machine, whatever "
                f"CUDA_VISIBLE_DEVICES says.",
            fix=f"Run on a machine where the number of GPUs is {config.gpu_count}.",
            when={"not": {"gpu": {"count": config.gpu_count}}},
        ))
    return out


def _probe_rules(config: Config) -> list[Rule]:
    file = config.file or "<configuration>"
    names = config.probes_must_pass
    return [
        _rule(rule_id, f"project-probe-{name}", file,
              summary=f"the project needs the {name} probe to pass; it ended {{probe.{name}.status}}: "
                      f"{{probe.{name}.message}}",
              why=f"Declared in {_lit(str(config.file))} ({config.key('probes-must-pass')}). A probe passes when "
                  f"its status is ok; an error, a crash, a timeout or a skip (no CUDA device, torch not "
                  f"importable) fails it. Under --static the probe does not run and the rule is skipped.",
              fix=f"Run `envcheck probe {name}` to see what failed, case by case.",
              when={"probe": {"name": name, "status": _NOT_OK}})
        for rule_id, name in zip(_ids("probes-must-pass", len(names), config), names, strict=True)
    ]


def rules(config: Config, *, require: Sequence[str] = (), forbid: Sequence[str] = ()) -> list[Rule]:
    """The project's policy as rules: the configuration's declarations, plus `require` / `forbid` given on the
    command line or to `envcheck.check()` (numbered after the configuration's)."""
    return [*_require_rules(config, require), *_forbid_rules(config, forbid), *_gpu_rules(config),
            *_probe_rules(config)]


def merge(pack: Sequence[Rule], policy: Sequence[Rule]) -> list[Rule]:
    """The pack and the policy rules together; a pack rule in the reserved range that a policy rule also uses is a
    configuration error naming both, never a silent shadowing."""
    taken = {r.id: r for r in pack}
    for rule in policy:
        if rule.id in taken:
            raise ConfigError(taken[rule.id].file, f"rule {rule.id} uses an id reserved for project policy "
                                                   f"({RESERVED}xx), which {rule.file} also needs", key="id")
    return [*pack, *policy]
