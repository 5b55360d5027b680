"""Loading and validating the rule pack: TOML files, one `[[rule]]` table per rule, and the data tables beside them.

Everything a rule file can get wrong is caught here, before any fact is collected, as one RuleError naming the
file, the rule id and the key: unknown keys, bad ids, bad specifiers, markers or regexes, unknown predicates,
unknown facts, placeholders that cannot be filled, duplicate ids or names across files, and malformed data tables
(rules/data/*.toml, see envcheck/derived/tables.py). `load` returns both as one `RulePack`, which is what
`envcheck.rules.engine.evaluate` takes.

Selectors (`--select`, `--ignore`, `envcheck rule`, the configuration's `select` / `ignore`, pytest markers) all
mean the same: an id prefix, any case ("EC01", "ec0201"), or a rule's exact name (`matches`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.cache.pack_stamp import pack_stamp
from envcheck.derived import tables as tables_mod
from envcheck.derived.derive import DERIVATIONS
from envcheck.derived.tables import Tables
from envcheck.errors import RuleError
from envcheck.rules.conditions import ALWAYS, parse
from envcheck.rules.model import Rule, Severity
from envcheck.rules.signatures import parse_signatures
from envcheck.rules.templates import invalid_placeholder, placeholders
from envcheck.support import input_files
from envcheck.support.patterns import lazy
from envcheck.support.resources import builtin_rules_dir

if TYPE_CHECKING:
    from envcheck.rules.conditions.where import Where
    from envcheck.rules.rule_file import RuleFile

__all__ = ["PLANS", "RULE_ID", "RULE_NAME", "RulePack", "builtin_rules_dir", "load", "load_file",
           "load_files", "matches", "select", "shipped", "unknown_selectors"]

RULE_ID = lazy(r"EC\d{4}")
RULE_NAME = lazy(r"[a-z0-9]+(-[a-z0-9]+)*")
_MAX_RULE_FILE_BYTES = 16 * 1024 * 1024  # the whole built-in pack is some hundred kilobytes
_FILE_KEYS = {"title", "description", "rule"}
_REQUIRED = ("id", "name", "severity", "summary", "why", "fix", "references")
_OPTIONAL = ("commands", "applies", "when", "foreach", "signatures", "plan", "fix_without_plan", "explained_by")
# Derived facts that are plans, not findings: the install that fixes a finding here (what `envcheck recommend` answers).
# A rule names one as `plan`, never as `foreach`: a finding never waits for its fix to be plannable.
PLANS = ("torch.recommended-build", "rocm.recommended-build")


@dataclass(frozen=True)
class RulePack:
    """Rules and the data tables their derived facts read, loaded and validated together: everything an
    evaluation needs besides the facts. Iterating it gives the rules."""

    rules: tuple[Rule, ...]
    tables: Tables

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def only(self, rules: Iterable[Rule]) -> RulePack:
        """Other rules (a selection, or with policy rules added) with the same tables."""
        return RulePack(tuple(rules), self.tables)


def _text(rule: dict[str, Any], key: str, where: Where) -> str:
    value = rule[key]
    if not isinstance(value, str) or not value.strip():
        raise where.at(key).error("expected a non-empty string")
    return value.strip()


def _references(raw: object, where: Where, item_fields: tuple[str, ...] | None,
                ) -> tuple[tuple[str, ...], tuple[tuple[str, str, tuple[str, ...]], ...]]:
    """A rule's references: https:// URLs, each a string (about every finding of the rule) or, in a `foreach`
    rule, `{ url = "https://...", item = { FIELD = "value" or ["value", ...] } }`: cited only for the findings whose
    item has one of those values (a thread about torchaudio is no reference for a finding about torchvision).
    Returns every URL, and (url, field, values) for each scope."""
    if not isinstance(raw, list) or not raw:
        raise where.error("expected a non-empty list of https:// URLs")
    urls: list[str] = []
    scoped: list[tuple[str, str, tuple[str, ...]]] = []
    for i, entry in enumerate(raw):
        url = entry.get("url") if isinstance(entry, dict) else entry
        if not isinstance(url, str) or not url.startswith("https://"):
            raise where.error(f"[{i}]: expected an https:// URL, or a table "
                              "{ url = \"https://...\", item = { FIELD = \"value\" } }")
        if isinstance(entry, dict):
            item = entry.get("item")
            if set(entry) != {"url", "item"} or not isinstance(item, dict) or not item:
                raise where.error(f"[{i}]: a table takes exactly `url` and `item` (the item fields it is about)")
            if item_fields is None:
                raise where.error(f"[{i}]: `item` scopes a reference to a foreach rule's items; this rule has none")
            for field, values in item.items():
                values = [values] if isinstance(values, str) else values
                if field not in item_fields:
                    raise where.error(f"[{i}]: item field {field!r} is not one of {', '.join(item_fields)}")
                if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
                    raise where.error(f"[{i}]: item.{field}: expected a value or a list of values")
                scoped.append((url, field, tuple(values)))
        urls.append(url)
    return tuple(urls), tuple(scoped)


def _check_placeholders(text: str, where: Where, item_fields: tuple[str, ...] | None,
                        plan_fields: tuple[str, ...] | None = None) -> None:
    for name in placeholders(text):
        problem = invalid_placeholder(name, item_fields, plan_fields)
        if problem:
            raise where.error(problem)


def _plan(raw: dict[str, Any], at: Callable[[str], Where]) -> tuple[str | None, tuple[str, ...] | None]:
    """The rule's `plan` and its item's fields, both None without one; `foreach` naming a plan is refused."""
    foreach = raw.get("foreach")
    if foreach in PLANS:
        raise at("foreach").error(f"{foreach!r} is a plan, not a finding: give the condition as 'when' and "
                                  f"plan = {foreach!r} (a finding never waits for its fix to be plannable)")
    plan = raw.get("plan")
    if plan is None:
        if "fix_without_plan" in raw:
            raise at("fix_without_plan").error("only for a rule with 'plan'")
        return None, None
    if plan not in PLANS:
        raise at("plan").error(f"expected a plan fact ({', '.join(PLANS)}), got {plan!r}")
    if "fix_without_plan" not in raw:
        raise at("fix_without_plan").error("required with 'plan': the fix in words where the plan is unknown")
    return plan, DERIVATIONS[plan].fields


def _rule(raw: object, index: int, file: str, area: str) -> Rule:
    from envcheck.rules.conditions.where import Where  # only where rules are parsed: a cached pack's check never is

    where = Where(file, None, f"rule[{index}]")
    if not isinstance(raw, dict):
        raise where.error("expected a table ([[rule]])")
    rule_id = raw.get("id")
    if isinstance(rule_id, str) and RULE_ID.fullmatch(rule_id):
        where = Where(file, rule_id, "")
    else:
        raise where.at("id").error(f"expected an id like 'EC0101', got {rule_id!r}")

    def at(key: str) -> Where:
        return Where(file, rule_id, key)

    extra = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if extra:
        raise at(extra[0]).error(f"unknown key (allowed: {', '.join(sorted((*_REQUIRED, *_OPTIONAL)))})")
    for key in _REQUIRED:
        if key not in raw:
            raise at(key).error("required")
    name = _text(raw, "name", where)
    if not RULE_NAME.fullmatch(name):
        raise at("name").error(f"expected kebab-case, got {name!r}")
    try:
        severity = Severity(raw["severity"])
    except ValueError:
        raise at("severity").error(f"expected error, warning or info, got {raw['severity']!r}") from None

    foreach = raw.get("foreach")
    item_fields: tuple[str, ...] | None = None
    if foreach is not None:
        if not isinstance(foreach, str) or foreach not in DERIVATIONS or not DERIVATIONS[foreach].fields:
            listy = sorted(n for n, d in DERIVATIONS.items() if d.fields)
            raise at("foreach").error(f"expected a list-valued fact ({', '.join(listy)}), got {foreach!r}")
        item_fields = DERIVATIONS[foreach].fields

    plan, plan_fields = _plan(raw, at)
    texts = {key: _text(raw, key, where) for key in ("summary", "why", "fix", *(("fix_without_plan",) if plan else ()))}
    for key, text in texts.items():
        # The summary and why state the finding, which the plan does not decide; only the fix and commands use it.
        _check_placeholders(text, at(key), item_fields, plan_fields if key == "fix" else None)

    # Error output may come without the facts a plan needs: then the fix shown is fix_without_plan.
    fixes = " ".join(texts[key] for key in ("fix", "fix_without_plan") if key in texts)
    signatures = parse_signatures(raw["signatures"], rule_id, at("signatures"), fixes) if "signatures" in raw else ()
    evidence_only = "when" not in raw and foreach is None
    if evidence_only and not signatures:
        raise at("when").error("required (or 'foreach', or 'signatures' for a failure only error output shows)")

    commands_raw = raw.get("commands", [])
    if not isinstance(commands_raw, list):
        raise at("commands").error("expected a list of argv lists, e.g. [[\"{python}\", \"-m\", \"pip\", ...]]")
    commands: list[tuple[str, ...]] = []
    for i, argv in enumerate(commands_raw):
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
            raise at(f"commands[{i}]").error("expected a non-empty list of non-empty strings")
        for arg in argv:
            _check_placeholders(arg, at(f"commands[{i}]"), item_fields, plan_fields)
        if argv[0] in ("pip", "pip3", "python", "python3"):
            # Principle 5: a bare pip may belong to another environment than the one checked.
            raise at(f"commands[{i}]").error("start with \"{python}\" so the command targets the checked interpreter")
        commands.append(tuple(argv))

    used = [name for text in (texts["fix"], *(arg for argv in commands for arg in argv)) for name in placeholders(text)]
    if plan is not None and not any(name.lstrip("*").startswith("plan.") for name in used):
        raise at("plan").error("neither 'fix' nor 'commands' uses it (write {plan.KEY} where the plan goes)")

    refs, scoped = _references(raw["references"], at("references"), item_fields)
    explained_by = raw.get("explained_by", [])
    if not isinstance(explained_by, list) or not all(isinstance(i, str) and RULE_ID.fullmatch(i) and i != rule_id
                                                     for i in explained_by):
        raise at("explained_by").error("expected a list of other rules' ids, e.g. [\"EC0702\"]")
    if explained_by and not signatures:
        raise at("explained_by").error("only for a rule with 'signatures' (it names who else explains them)")

    return Rule(
        id=rule_id,
        name=name,
        severity=severity,
        summary=texts["summary"],
        why=texts["why"],
        fix=texts["fix"],
        commands=tuple(commands),
        references=refs,
        scoped_references=scoped,
        applies=parse(raw["applies"], at("applies")) if "applies" in raw else ALWAYS,
        when=parse(raw["when"], at("when")) if "when" in raw else ALWAYS,
        foreach=foreach,
        area=area,
        file=file,
        signatures=signatures,
        evidence_only=evidence_only,
        plan=plan,
        fix_without_plan=texts.get("fix_without_plan", ""),
        explained_by=tuple(explained_by),
    )


def load_file(path: Path) -> RuleFile:
    from envcheck.rules.rule_file import RuleFile  # only where rule files are read: a cached pack's check reads none

    file = str(path)
    data = input_files.load_toml(path, error=RuleError, limit=_MAX_RULE_FILE_BYTES)
    extra = sorted(set(data) - _FILE_KEYS)
    if extra:
        raise RuleError(file, f"unknown top-level key (allowed: {', '.join(sorted(_FILE_KEYS))})", key=extra[0])
    raw_rules = data.get("rule", [])
    if not isinstance(raw_rules, list):
        raise RuleError(file, "expected [[rule]] tables", key="rule")
    area = path.stem
    rules = tuple(_rule(raw, i, file, area) for i, raw in enumerate(raw_rules))
    title = data.get("title", area.replace("-", " ").capitalize())
    description = data.get("description", "")
    if not isinstance(title, str) or not isinstance(description, str):
        raise RuleError(file, "title and description must be strings", key="title")
    return RuleFile(path=path, area=area, title=title, description=description, rules=rules)


def load_files(dirs: Sequence[Path]) -> list[RuleFile]:
    """Every *.toml in `dirs` (sorted), with ids and names unique across all of them."""
    files: list[RuleFile] = []
    for directory in dirs:
        if not directory.is_dir():
            raise RuleError(str(directory), "rule directory does not exist")
        files.extend(load_file(p) for p in sorted(directory.glob("*.toml")))
    seen_ids: dict[str, str] = {}
    seen_names: dict[str, str] = {}
    for rule_file in files:
        for rule in rule_file.rules:
            if rule.id in seen_ids:
                raise RuleError(rule.file, f"duplicate id (also in {seen_ids[rule.id]})", rule_id=rule.id, key="id")
            if rule.name in seen_names:
                raise RuleError(rule.file, f"duplicate name {rule.name!r} (also in {seen_names[rule.name]})",
                                rule_id=rule.id, key="name")
            seen_ids[rule.id] = rule.file
            seen_names[rule.name] = rule.file
    for rule_file in files:
        for rule in rule_file.rules:
            unknown = [i for i in rule.explained_by if i not in seen_ids]
            if unknown:
                raise RuleError(rule.file, f"no rule {unknown[0]} in the pack", rule_id=rule.id, key="explained_by")
    return files


def load(extra_dirs: Iterable[Path] = (), *, use_cache: bool = True, avoid: Sequence[str] = ()) -> RulePack:
    """The shipped pack plus any extra rule directories, with the data tables of their data/ folders.

    The validated pack is cached (envcheck.cache.signed: signed, in the user's cache directory, never under a prefix in
    `avoid`, the checked environment) under a stamp of every rule and table file and of envcheck's own code, so an
    edited, added or removed file is a miss; `use_cache=False` (--no-cache) neither reads nor writes it."""
    dirs = [builtin_rules_dir(), *extra_dirs]
    stamp = pack_stamp(dirs) if use_cache else None
    entry = _pack_entry(dirs)
    if stamp is not None:
        cached = _cached_pack(entry, stamp, avoid)
        if cached is not None:
            return cached
    rules = tuple(rule for f in load_files(dirs) for rule in f.rules)
    pack = RulePack(rules, tables_mod.load(dirs))
    if stamp is not None:
        _store_pack(pack, entry, stamp, avoid)
    return pack


def _pack_entry(dirs: Sequence[Path]) -> str:
    """The cache entry of a pack made of these rule directories: one per set of directories, so that projects with
    their own `rule-dirs` (or `--rules`) do not evict each other's pack, or the shipped one, on every run."""
    import hashlib

    if len(dirs) <= 1:
        return "rule-pack"
    joined = "\0".join(str(d.absolute()) for d in dirs)
    return "rule-pack-" + hashlib.sha256(joined.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _cached_pack(entry: str, stamp: str, avoid: Sequence[str]) -> RulePack | None:
    from envcheck.cache import pack_data, signed

    payload = signed.load_signed(entry, stamp, avoid)
    if payload is None:
        return None
    import gc

    # Rebuilding allocates thousands of objects that all live on: collections in the middle of it find nothing.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        # Plain data, never a pickle: a forged entry describes a pack at worst, and runs nothing (pack_data.py).
        head, *tables = pack_data.parts(payload)
        found = pack_data.loads(head)
    except pack_data.NotData:  # an entry our own older code wrote, or not ours: a miss
        return None
    finally:
        if was_enabled:
            gc.enable()
    if not (isinstance(found, tuple) and len(found) == 2 and isinstance(found[1], RulePack)
            and isinstance(found[0], tuple) and len(found[0]) == len(tables)
            and all(isinstance(stem, str) for stem in found[0])):
        return None
    stems, pack = found
    files = pack.tables.files

    def again(stem: str) -> object:
        return tables_mod.parse_file(stem, files[stem])

    # The rules now; each data table when a derivation first reads it (most checks read few of them).
    return RulePack(pack.rules, Tables(pack_data.OnFirstUse(dict(zip(stems, tables, strict=True)), again), files))


def _store_pack(pack: RulePack, entry: str, stamp: str, avoid: Sequence[str]) -> None:
    from envcheck.cache import pack_data, signed

    stems = tuple(pack.tables.parsed)
    try:
        payload = pack_data.dumps_parts([(stems, RulePack(pack.rules, Tables({}, pack.tables.files))),
                                         *(pack.tables.parsed[stem] for stem in stems)])
    except pack_data.NotData:  # a value of a class the format does not hold: the pack is just not cached
        return
    signed.store_signed(entry, stamp, payload, avoid)


def matches(selector: str, rule_id: str, name: str) -> bool:
    """Whether a selector picks a rule: a prefix of its id, in any case ("EC01", "ec0201"), or its exact name."""
    return rule_id.startswith(selector.upper()) or name == selector


def select(rules: Iterable[Rule], select: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[Rule]:
    """Rules matching any `select` entry (all rules when there is none) and no `ignore` entry."""

    def any_of(rule: Rule, selectors: Sequence[str]) -> bool:
        return any(matches(s, rule.id, rule.name) for s in selectors)

    return [r for r in rules if (not select or any_of(r, select)) and not any_of(r, ignore)]


def unknown_selectors(rules: Iterable[Rule], selectors: Sequence[str]) -> list[str]:
    """Entries of --select / --ignore that match no rule: almost always a typo, so the CLI refuses them."""
    rules = list(rules)
    return [s for s in selectors if not any(matches(s, r.id, r.name) for r in rules)]


def shipped(rule: Rule) -> bool:
    """Whether `rule` is one of the pack shipped with envcheck: not from a project's `rule-dirs` or `--rules`, and
    not generated from a project's files (EC98xx) or policy (EC99xx). `envcheck fix` trusts only these to choose
    where an installer downloads from (envcheck/remedy/consent.py)."""
    return Path(rule.file).resolve().parent == builtin_rules_dir().resolve()
