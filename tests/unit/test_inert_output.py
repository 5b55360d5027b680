"""Text quoted from a pasted report is inert in every format: a GPU name carrying a link, HTML, a mention, emphasis,
a workflow command and terminal control sequences goes through `envcheck check --report` and comes out as text."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _fakes import FIXTURES
from click.testing import CliRunner
from report_samples import finding, report

from envcheck.cli.click_cli import cli
from envcheck.cli.output import error_line
from envcheck.facts.probe_results import ProbeResult
from envcheck.report import github, render
from envcheck.report.probes import render as render_probes
from envcheck.report.quote import md_code, md_fence, md_text
from envcheck.rules.model import Status

GPU = "NVIDIA GeForce RTX 5090 D"
# What a hostile paste puts after the GPU's name: markdown that GitHub would render live, a workflow command, and
# terminal controls: ESC c (reset), a DCS string, a one-byte CSI, BEL, backspace, a right-to-left override.
PAYLOAD = ("[Download the fixed driver](https://evil.example/d.sh) @octocat <a href=\"https://evil.example\">x</a> "
           "#1 **bold** _em_ | cell ``` `tick` ![img](https://evil.example/i.png) ::error::injected ##[error]old "
           "%0A \x1bc \x1bP1$r\x1b\\ \x9b31m \x07 \x08 \u202e reversed")
# Every character a terminal or a reader's display obeys rather than shows, newline and tab aside.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
SGR = re.compile("\x1b\\[[0-9;]*m")  # a colour code: what envcheck itself writes with --color


@pytest.fixture
def pasted(tmp_path: Path) -> Path:
    """A collect_env of an RTX 5090 D with a cu126 torch (EC0401 fires and names the GPU), the name made hostile."""
    text = (FIXTURES / "reports" / "torch-2.6-rtx5090d.txt").read_text(encoding="utf-8")
    line = f"GPU models and configuration: GPU 0: {GPU}"
    assert line in text
    path = tmp_path / "issue.txt"
    path.write_text(text.replace(line, f"{line} {PAYLOAD}"), encoding="utf-8")
    return path


def _check(path: Path, fmt: str, *extra: str) -> str:
    result = CliRunner().invoke(cli, ["check", "--report", str(path), "--format", fmt, *extra])
    assert result.exit_code == 1, result.output
    assert "Download the fixed" in result.output  # the name reached the report: the checks below mean something
    return result.output


def _unescaped(text: str) -> str:
    """`text` with each backslash escape dropped, with the character it escapes."""
    return re.sub(r"\\[!-/:-@\[-`{-~]", "", text)


def markdown_prose(md: str) -> str:
    """What GitHub renders from `md` as markup or as linkable text: fenced blocks, code spans and backslash escapes
    taken out, as CommonMark reads them (a code span closes at the next backtick run of its own length)."""
    lines, fence = [], ""
    for line in md.splitlines():
        opening = re.match("`{3,}", line)
        if fence:
            closing = opening and line.rstrip() == opening[0] and len(opening[0]) >= len(fence)
            fence = "" if closing else fence
        elif opening:
            fence = opening[0]
        else:
            lines.append(line)
    text, out, i = "\n".join(lines), [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and re.match(r"[!-/:-@\[-`{-~]", text[i + 1]):
            i += 2
        elif text[i] == "`":
            run = "`" * (len(text) - i - len(text[i:].lstrip("`")))
            close = re.compile(f"(?<!`){run}(?!`)").search(text, i + len(run))
            if close is None:
                out.append(run)
                i += len(run)
            else:
                out.append(" ")
                i = close.end()
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def assert_inert_markdown(md: str) -> None:
    """No link, HTML, mention, reference, emphasis or control from the payload, and no table row broken out of."""
    assert not CONTROLS.search(md)
    prose = markdown_prose(md)
    assert "evil.example" not in prose and "](" not in prose
    assert "@" not in prose and not re.search(r"#\d", prose)
    assert not re.search(r"[*_]+(bold|em)[*_]+", prose)
    tags = set(re.findall(r"<[A-Za-z/!?][^>]*>?", prose))
    assert tags <= {"<details>", "<summary>", "</summary>", "</details>"} | {t for t in tags if
                                                                          t.startswith("<https://")}, tags
    for line in md.splitlines():
        if line.startswith("| "):
            assert _unescaped(line).count("|") == 5, line  # four cells: `| a | b | c | d |`


def test_markdown_quotes_the_report_inertly(pasted: Path) -> None:
    """The markdown report names the GPU three times, but as text: no link, HTML, mention, reference or emphasis."""
    md = _check(pasted, "markdown")
    assert md.count("RTX 5090 D") >= 3
    assert_inert_markdown(md)


def test_text_report_has_no_control_characters(pasted: Path) -> None:
    """The text report shows each control character of the name as U+FFFD; with --color only envcheck's colours."""
    for extra in ("--no-color", "--color"):
        out = _check(pasted, "text", extra)
        assert not CONTROLS.search(SGR.sub("", out)), extra
        assert "\ufffdc \ufffdP1$r\ufffd\\ \ufffd31m" in out
    assert "\x1b[31m" in out  # the colours still work


def test_junit_report_parses_and_holds_no_control_characters(pasted: Path) -> None:
    """The JUnit XML parses, and neither its attributes nor its texts hold a control or bidi character."""
    root = ET.fromstring(_check(pasted, "junit"))
    texts = [t for e in root.iter() for t in (e.text or "", *e.attrib.values())]
    assert any("Download the fixed driver" in t for t in texts)
    assert not [t for t in texts if CONTROLS.search(t)]


def test_github_annotations_carry_no_command(pasted: Path) -> None:
    """Each line is one of envcheck's own workflow commands or its plain tally; no control character gets through."""
    out = _check(pasted, "github")
    lines = out.splitlines()
    assert [line.split(" ", 1)[0] for line in lines[:-1]] == ["::notice", "::error"]
    assert lines[-1].startswith("envcheck ") and "##[" not in lines[-1]
    assert "::error::injected ##[error]old %250A" in lines[1]
    assert not CONTROLS.search(out)


def test_json_escapes_controls_and_keeps_the_data(pasted: Path) -> None:
    """The JSON report writes the control and bidi characters as \\u escapes: printed inert, read back unchanged."""
    out = _check(pasted, "json")
    assert not CONTROLS.search(out)
    (fired,) = [f for f in json.loads(out)["findings"] if f["status"] == "fail"]
    assert PAYLOAD in fired["summary"]


def test_github_plain_line_and_multiline_messages() -> None:
    """A newline in a finding cannot start a command, nor an old-style `##[command]` in the interpreter's path."""
    odd = finding("EC0501", Status.FAIL, summary="boom\n::add-mask::secret\r::stop-commands::x\x1b]0;title\x07")
    lines = github.render(report(odd, python="/opt/##[add-mask]x/python")).splitlines()
    assert len(lines) == 2 and lines[0].startswith("::error title=EC0501 ")
    assert "%0A::add-mask::secret\ufffd::stop-commands::x\ufffd]0;title\ufffd" in lines[0]
    assert lines[1].endswith("/opt/##%5Badd-mask]x/python")


@pytest.mark.parametrize(
    ("text", "cell", "expected"),
    [
        pytest.param("plain words", False, "plain words", id="plain"),
        pytest.param("[a](https://e.x/y)", False, "`[a](https://e.x/y`)", id="link"),
        pytest.param("see (https://e.x/y), then", False, "see (`https://e.x/y`), then", id="url-in-brackets"),
        pytest.param("ask @octocat or a@b.c", False, "ask `@octocat` or `a@b.c`", id="mention-email"),
        pytest.param("#1 o/r#2 GH-3", False, "`#1` `o/r#2` `GH-3`", id="references"),
        pytest.param("<img src=x> 1<2 a&amp;", False, "\\<img src=x> 1<2 a\\&amp;", id="html-entity"),
        pytest.param("**b** _i_ sm_90 ~s~ $m$", False, "\\*\\*b\\*\\* \\_i\\_ sm_90 \\~s\\~ \\$m\\$", id="emphasis"),
        pytest.param("a \\[b] \\", False, "a \\\\\\[b\\] \\\\", id="backslash"),
        pytest.param("# h", False, "\\# h", id="heading"),
        pytest.param("> q", False, "\\> q", id="quote"),
        pytest.param("- i", False, "\\- i", id="list"),
        pytest.param("12. i", False, "12\\. i", id="ordered-list"),
        pytest.param("two\nlines", False, "two lines", id="newline"),
        pytest.param("a | b", True, "a \\| b", id="cell-pipe"),
        pytest.param("run `a|b` now", True, "run `a\\|b` now", id="cell-pipe-in-code"),
        pytest.param("x ``` y", False, "x \\`\\`\\` y", id="lone-backticks"),
    ],
)
def test_md_text(text: str, cell: bool, expected: str) -> None:
    """Quoted text is escaped where a backslash stops markdown, and quoted as code where only code stops GitHub."""
    assert md_text(text, cell=cell) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("python", "`python`", id="plain"),
        pytest.param("a`b", "``a`b``", id="backtick"),
        pytest.param("`a``", "``` `a`` ```", id="edge-backticks"),
    ],
)
def test_md_code(text: str, expected: str) -> None:
    """A code span is fenced by more backticks than it holds, so nothing in it closes it early."""
    assert md_code(text) == expected


def test_md_fence_outlasts_its_content() -> None:
    """A fenced block's fence is longer than any backtick run in it."""
    assert md_fence(["echo '````'"], "sh") == ["`````sh", "echo '````'", "`````"]
    assert md_fence(["echo hi"]) == ["```", "echo hi", "```"]


def test_probe_text_shows_a_childs_escapes_inert() -> None:
    """`envcheck probe` shows a crashed child's message and stderr with their escape sequences made visible."""
    results = {"torch-import": ProbeResult(status="crashed", error_class="SIGSEGV", message="\x1b]0;owned\x07died",
                                           stderr_tail="\x1b[2Jcleared\n\x9b31mred")}
    for fmt in ("text", "json"):
        assert not CONTROLS.search(render_probes(results, fmt, from_cache=False)), fmt


def test_error_line_shows_controls_inert(capsys: pytest.CaptureFixture[str]) -> None:
    """An error quoting a pasted line writes its escape sequences as U+FFFD."""
    error_line("envcheck: error: line 3: \x1b[2J\u202egpu")
    assert capsys.readouterr().err == "envcheck: error: line 3: \ufffd[2J\ufffdgpu\n"


def test_every_format_of_a_hostile_report_renders() -> None:
    """A report whose every text is hostile renders in each format with no control character left."""
    odd = finding("EC0301", Status.FAIL, summary=PAYLOAD, why=PAYLOAD, fix=PAYLOAD, evidence=PAYLOAD,
                  item={"name": PAYLOAD}, commands=(("pip", "install", PAYLOAD),))
    hostile = report(odd, problems=(PAYLOAD,), python=PAYLOAD)
    for fmt in ("text", "markdown", "junit", "github", "json"):
        assert not CONTROLS.search(render(hostile, fmt)), fmt
    assert_inert_markdown(render(hostile, "markdown"))
