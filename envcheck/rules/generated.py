"""The project's declarations as generated rules, in the reserved range EC98xx, built like the policy rules
(envcheck/rules/policy.py, EC99xx) so that the engine, every reporter, --select / --ignore and `envcheck fix` treat them
like any other rule:

    EC9801 project-requirement-unmet   error     one verdict per declared requirement the environment does not
                                                 satisfy (derived fact `project.unmet`)
    EC9802 project-lock-drift          warning   one verdict per installed distribution whose version is not the
                                                 one the lock pins (derived fact `project.lock-drift`)

Each rule exists only when the project declares something of its kind; one `foreach` rule per kind (rather than a
rule per requirement) keeps ids stable and lets a lock of thousands of packages be judged in one pass.
"""

from __future__ import annotations

from envcheck.facts.project import ProjectFacts
from envcheck.rules import registry
from envcheck.rules.model import Rule, Severity
from envcheck.rules.policy import generated_rule, literal
from envcheck.sources.project.discover import Project

RESERVED = registry.PROJECT  # ids of rules generated from the project's files; the rule pack never uses them
DOCS = "https://github.com/envcheck-ml/envcheck/blob/main/docs/project.md"


def rules(project: Project | ProjectFacts | None) -> list[Rule]:
    """EC9801 when the project declares requirements, EC9802 when it has a lock; none without a project."""
    if project is None:
        return []
    file = literal(str(project.root))
    out = []
    if any(r.kind != "policy" for r in project.requirements):  # policy lines are EC99xx's
        index = [literal(option) for option in project.index_options]
        out.append(generated_rule(
            "EC9801", "project-requirement-unmet", str(project.root),
            summary="{item.source} requires {item.requirement}; {item.name} is {item.installed}",
            why=f"The project in {file} declares these requirements, so its code expects them installed in that "
                "range. A project that is itself installed is judged by its installed metadata (EC0101 / EC0102) "
                "instead, so its own [project] dependencies are not checked twice.",
            fix="Install each requirement into the checked environment"
                + (f", from the project's index ({' '.join(index)})." if index else "."),
            when=None, foreach="project.unmet", references=(DOCS,),
            commands=[["{python}", "-m", "pip", "install", *index, "{item.install}"]],
        ))
    if project.locks:
        out.append(generated_rule(
            "EC9802", "project-lock-drift", str(project.root),
            summary="{item.name} {item.installed} installed, {item.lock} pins {item.locked}",
            why=f"The project in {file} locks its dependencies: the lock pins, for this platform, the versions "
                "the project was tested with. The environment has drifted from it (installed by hand, or the lock "
                "was updated since the last sync).",
            fix="Run `{item.sync}` in the project's folder to sync the whole environment with {item.lock}, or "
                "install the locked version alone (below; --no-deps leaves the rest as it is).",
            when=None, foreach="project.lock-drift", severity=Severity.WARNING, references=(DOCS,),
            commands=[["{python}", "-m", "pip", "install", "--no-deps", "{item.install}"]],
        ))
    return out
