"""Regenerate rules/data/release-names.json: which releases of the libraries people hit most provide each public
name and module that importers use (the data behind EC1903, `envcheck/derived/release_names.py` reads it).

    python bench/release_names.py                 # every library, wheels cached under bench/results/wheels
    python bench/release_names.py --only numpy    # one library (the others are kept from the current file)

For each library it asks pip which releases exist, takes the first final release of every minor series from a
floor on (`LIBRARIES`), downloads that release's wheel with `pip download --no-deps --only-binary=:all:` (torch's
macOS wheel: its Linux wheels are CUDA builds of ~900 MB) and reads its Python files and type stubs without running
anything:

- its modules: every .py/.pyi file and package folder, up to `MODULE_DEPTH` components (`transformers.models.llama`);
- the public names of its key modules (`KEY_MODULES`): what the module binds at its top level (definitions,
  assignments, imports, `from .x import *` resolved inside the wheel), its `__all__`, and the names its lazy loader
  declares (transformers', diffusers' and peft's `_import_structure`, huggingface_hub's `_SUBMOD_ATTRS`);
  `.pyi` stubs count (numpy's aliases, torch's `_C` functions, tokenizers' compiled classes).

A name's range is the first and last examined release that has it: "0.23.0..0.25.0" means present from 0.23.0
through 0.25.0 and absent from the next examined release (0.26.0) on; "0.23.0.." means present in the newest. Names
are written grouped by range, space-separated, to keep the file small. Only the standard library and pip are used.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import time
import zipfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "rules" / "data" / "release-names.json"
CACHE = ROOT / "bench" / "results" / "wheels"
MODULE_DEPTH = 3
FORMAT = 1

# Compiled wheels are read from their macOS builds (torch's Linux wheels are CUDA builds of ~900 MB); the Python
# files are the same in every build of a release.
MAC = ("--platform", "macosx_14_0_arm64", "--platform", "macosx_11_0_arm64", "--platform", "macosx_10_9_x86_64")
# distribution -> (import package, oldest minor series examined, key modules whose names are listed, pip platform
# options). The floors reach back about four years, or to the library's first release people still meet.
LIBRARIES: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]] = {
    "torch": ("torch", "1.8", ("torch", "torch.nn", "torch.nn.functional", "torch.library", "torch.cuda",
                               "torch.distributed", "torch.utils", "torch.utils.data", "torch.amp", "torch.fx",
                               "torch.compiler", "torch.export", "torch.nn.attention", "torch.backends.cuda",
                               "torch.serialization", "torch.optim", "torch.optim.lr_scheduler"),
              MAC),
    "torchvision": ("torchvision", "0.9", ("torchvision", "torchvision.transforms",
                                           "torchvision.transforms.functional", "torchvision.models",
                                           "torchvision.ops", "torchvision.io", "torchvision.datasets",
                                           "torchvision.utils", "torchvision.transforms.v2"),
                    MAC),
    "transformers": ("transformers", "4.10", ("transformers", "transformers.utils", "transformers.modeling_utils",
                                              "transformers.cache_utils", "transformers.generation",
                                              "transformers.trainer", "transformers.trainer_utils",
                                              "transformers.pytorch_utils", "transformers.utils.import_utils",
                                              "transformers.tokenization_utils_base",
                                              "transformers.integrations", "transformers.modeling_outputs",
                                              "transformers.activations", "transformers.file_utils"), ()),
    "huggingface-hub": ("huggingface_hub", "0.10", ("huggingface_hub", "huggingface_hub.utils",
                                                    "huggingface_hub.constants", "huggingface_hub.file_download",
                                                    "huggingface_hub.hf_api", "huggingface_hub.errors"), ()),
    "diffusers": ("diffusers", "0.10", ("diffusers", "diffusers.models", "diffusers.utils", "diffusers.schedulers",
                                        "diffusers.pipelines", "diffusers.loaders",
                                        "diffusers.models.attention_processor", "diffusers.utils.torch_utils",
                                        "diffusers.models.embeddings"), ()),
    "accelerate": ("accelerate", "0.15", ("accelerate", "accelerate.utils", "accelerate.state", "accelerate.hooks",
                                          "accelerate.big_modeling"), ()),
    "peft": ("peft", "0.3", ("peft", "peft.tuners", "peft.utils", "peft.tuners.lora"), ()),
    "trl": ("trl", "0.4", ("trl", "trl.trainer", "trl.models", "trl.core"), ()),
    "tokenizers": ("tokenizers", "0.12", ("tokenizers", "tokenizers.models", "tokenizers.pre_tokenizers",
                                          "tokenizers.processors", "tokenizers.normalizers", "tokenizers.decoders",
                                          "tokenizers.trainers", "tokenizers.implementations"),
                   MAC),
    "numpy": ("numpy", "1.20", ("numpy", "numpy.lib", "numpy.linalg", "numpy.random", "numpy.typing",
                                "numpy.exceptions", "numpy.dtypes"),
              MAC),
    "pydantic": ("pydantic", "1.8", ("pydantic", "pydantic.fields", "pydantic.main", "pydantic.types",
                                     "pydantic.dataclasses", "pydantic.functional_validators"), ()),
    "protobuf": ("google.protobuf", "3.19", ("google.protobuf", "google.protobuf.descriptor",
                                             "google.protobuf.internal", "google.protobuf.internal.builder",
                                             "google.protobuf.message", "google.protobuf.json_format",
                                             "google.protobuf.runtime_version"), ()),
    "vllm": ("vllm", "0.4", ("vllm", "vllm.model_executor", "vllm.distributed", "vllm.utils", "vllm.config",
                             "vllm.engine.arg_utils", "vllm.sampling_params", "vllm.attention"), ()),
    "xformers": ("xformers", "0.0.20", ("xformers", "xformers.ops", "xformers.ops.fmha", "xformers.components"), ()),
    "bitsandbytes": ("bitsandbytes", "0.38", ("bitsandbytes", "bitsandbytes.nn", "bitsandbytes.optim",
                                              "bitsandbytes.functional", "bitsandbytes.cextension"), ()),
}
# Extra sources of a key module's names, where the module binds them in a loop that no static reading follows:
# torch copies every function of its `_C._VariableFunctions` into its namespace.
EXTRA_NAMES = {"torch": ("torch/_C/_VariableFunctions.pyi",)}
LAZY_TABLES = ("_import_structure", "_SUBMOD_ATTRS")
_RELEASE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


def pip(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "pip", *args], check=True, capture_output=True, text=True).stdout


def key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def releases(dist: str, floor: str) -> list[str]:
    """The first final release of each minor series from `floor` on, oldest first, as pip sees them."""
    line = next(x for x in pip("index", "versions", dist).splitlines() if x.startswith("Available versions:"))
    finals = [v for v in line.split(":", 1)[1].replace(",", " ").split() if _RELEASE.match(v)]
    first: dict[tuple[int, ...], str] = {}
    for version in sorted(finals, key=key):
        series = key(version)[:2] if dist != "xformers" else key(version)[:3]  # xformers releases 0.0.N
        if series >= key(floor)[:len(series)]:
            first.setdefault(series, version)
    return [first[s] for s in sorted(first)]


def wheel(dist: str, version: str, platform: tuple[str, ...]) -> Path:
    folder = CACHE / dist / version
    found = sorted(folder.glob("*.whl"))
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        # A compiled wheel is asked for one Python: the newest first, then an older one for old releases.
        pythons = ("3.12", "3.9") if platform else ("",)
        for python in pythons:
            options = ["--no-deps", "--only-binary=:all:", *platform, *(["--python-version", python] if python else [])]
            try:
                pip("download", "-q", *options, "-d", str(folder), f"{dist}=={version}")
                break
            except subprocess.CalledProcessError:
                if python == pythons[-1]:
                    raise
        found = sorted(folder.glob("*.whl"))
    return found[0]


def _try_wheel(dist: str, version: str, platform: tuple[str, ...]) -> Path | None:
    try:
        return wheel(dist, version, platform)
    except subprocess.CalledProcessError:
        return None


class Wheel:
    """The Python files of one wheel, by module name, and their top-level names (read once)."""

    def __init__(self, path: Path, package: str) -> None:
        self.files: dict[str, str] = {}  # module -> source text (a stub beside a .py wins: it lists compiled names)
        self.packages: set[str] = set()
        top = package.replace(".", "/")
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if not name.startswith(top + "/") or not name.endswith((".py", ".pyi")):
                    continue
                parts = name[:-3 if name.endswith(".py") else -4].split("/")
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                    self.packages.add(".".join(parts))
                module = ".".join(parts)
                text = archive.read(name).decode("utf-8", "replace")
                self.files[module] = f"{self.files.get(module, '')}\n{text}" if name.endswith(".pyi") or \
                    module not in self.files else f"{text}\n{self.files[module]}"
                for depth in range(1, len(parts)):
                    self.packages.add(".".join(parts[:depth]))
            self.extra = {n: archive.read(n).decode("utf-8", "replace") for n in EXTRA_NAMES.get(package, ())
                          if n in archive.namelist()}
        self._names: dict[str, set[str]] = {}
        self._all: dict[str, set[str]] = {}  # module -> its literal __all__, where it has one

    def modules(self, depth: int) -> set[str]:
        found = {m for m in (*self.files, *self.packages) if len(m.split(".")) <= depth}
        return {m for m in found if not any(p.startswith("__") for p in m.split("."))}

    def names(self, module: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if module in self._names:
            return self._names[module]
        if module in seen or module not in self.files:
            return set()
        try:
            tree = ast.parse(self.files[module])
        except SyntaxError:  # written for a newer Python than the one running this: counted as naming nothing
            tree = ast.Module(body=[], type_ignores=[])
        out: set[str] = set()
        self._walk(tree.body, module, out, seen | {module})
        if module in ("torch",) and self.extra:
            for text in self.extra.values():
                self._walk(ast.parse(text).body, module, out, seen | {module})
        self._names[module] = out
        return out

    def _walk(self, body: list[ast.stmt], module: str, out: set[str], seen: frozenset[str]) -> None:
        is_package = module in self.packages
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.Import):
                out.update((a.asname or a.name.split(".")[0]) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = self._resolve(module, is_package, node.module, node.level)
                for alias in node.names:
                    if alias.name == "*":
                        if base is not None:
                            # What `import *` binds: the module's __all__ where it declares one, else its public
                            # names (transformers 4.48+ lists its models only as `from .models import *`).
                            declared = _literal_all(self.files.get(base, ""))
                            names = set() if declared is not None else self.names(base, seen)
                            declared = declared if declared is not None else self._all.get(base)
                            out.update(n for n in (declared if declared is not None else names)
                                       if not n.startswith("_"))
                    else:
                        out.add(alias.asname or alias.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for leaf in ast.walk(target):
                        if isinstance(leaf, ast.Name):
                            out.add(leaf.id)
                    owner = target.value if isinstance(target, ast.Subscript) else target
                    if isinstance(owner, ast.Name) and (owner.id in LAZY_TABLES or owner.id == "__all__"):
                        strings = _strings(node.value) if node.value is not None else set()
                        out.update(strings)
                        if owner.id == "__all__":
                            self._all.setdefault(module, set()).update(strings)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                call = node.value.func
                # _import_structure["x"].extend([...]), __all__.extend([...]), __all__.append("x")
                if isinstance(call, ast.Attribute) and call.attr in ("extend", "append", "update"):
                    owner = call.value.value if isinstance(call.value, ast.Subscript) else call.value
                    if isinstance(owner, ast.Name) and (owner.id in LAZY_TABLES or owner.id == "__all__"):
                        for arg in node.value.args:
                            out.update(_strings(arg))
                            if owner.id == "__all__":
                                self._all.setdefault(module, set()).update(_strings(arg))
            if isinstance(node, (ast.If, ast.Try, ast.With)):
                for child in ("body", "orelse", "finalbody"):
                    self._walk(getattr(node, child, []), module, out, seen)
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    self._walk(handler.body, module, out, seen)

    def _resolve(self, module: str, is_package: bool, name: str | None, level: int) -> str | None:
        if level == 0:
            return name
        parts = module.split(".") if is_package else module.split(".")[:-1]
        if level > 1:
            parts = parts[:len(parts) - (level - 1)]
        return ".".join([*parts, *([name] if name else [])])


_ALL = re.compile(r"^__all__\s*=\s*[\[(]", re.MULTILINE)
_ALL_CACHE: dict[int, set[str] | None] = {}


def _literal_all(text: str) -> set[str] | None:
    """A module's `__all__ = [...]` read without parsing the whole file (transformers' ~2,000 model files, star
    imported by every release since 4.48, mostly unchanged between releases: remembered by their text); None when it
    has no literal one."""
    key = hash(text)
    if key not in _ALL_CACHE:
        found = None
        match = _ALL.search(text)
        if match is not None:
            close = "]" if text[match.end() - 1] == "[" else ")"
            end = text.find(close, match.end())
            try:
                value = ast.literal_eval(text[match.end() - 1:end + 1]) if end >= 0 else None
            except (ValueError, SyntaxError):
                value = None
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                found = set(value)
        _ALL_CACHE[key] = found
    return _ALL_CACHE[key]


def _strings(node: ast.AST) -> set[str]:
    """Every identifier-like string literal inside `node` (a lazy loader's table of names)."""
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and n.value.isidentifier()}


def ranges(present: dict[str, list[int]], versions: list[str]) -> dict[str, str]:
    """name -> indices of the releases that have it, as "first..last" ranges ("first.." up to the newest), grouped:
    range -> space-separated names. A name that comes back after a gap keeps its first and last appearance."""
    grouped: dict[str, list[str]] = defaultdict(list)
    newest = len(versions) - 1
    for name, where in present.items():
        first, last = min(where), max(where)
        grouped[f"{versions[first]}..{versions[last] if last < newest else ''}"].append(name)
    return {span: " ".join(sorted(names)) for span, names in sorted(grouped.items())}


def library(dist: str, log: list[str]) -> dict[str, object]:
    package, floor, key_modules, platform = LIBRARIES[dist]
    versions = releases(dist, floor)
    with ThreadPoolExecutor(max_workers=4) as pool:  # pip spends most of a download starting up: four at a time
        list(pool.map(lambda v: _try_wheel(dist, v, platform), versions))
    modules: dict[str, list[int]] = defaultdict(list)
    names: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    examined: list[str] = []
    for version in versions:
        try:
            path = wheel(dist, version, platform)
        except subprocess.CalledProcessError:
            log.append(f"{dist} {version}: no wheel pip can download for the platforms asked; skipped")
            continue
        index = len(examined)
        examined.append(version)
        read = Wheel(path, package)
        depth = MODULE_DEPTH + package.count(".")
        for module in read.modules(depth):
            modules[module].append(index)
        for module in key_modules:
            for name in read.names(module):
                if not name.startswith("_"):
                    names[module][name].append(index)
        counts = {m: len(read.names(m)) for m in key_modules}
        log.append(f"{dist} {version}: {len(read.files)} files, {counts.get(package, 0)} names in {package}")
    return {"package": package, "releases": examined, "modules": ranges(modules, examined),
            "names": {m: ranges(n, examined) for m, n in sorted(names.items()) if n}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(LIBRARIES), help="regenerate these libraries only")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    started = time.monotonic()
    current = json.loads(args.out.read_text()) if args.out.exists() else {"format": FORMAT, "libraries": {}}
    log: list[str] = []
    for dist in args.only or sorted(LIBRARIES):
        current["libraries"][dist] = library(dist, log)
        print("\n".join(log[-3:]), file=sys.stderr)
        current["libraries"] = dict(sorted(current["libraries"].items()))
        current["format"] = FORMAT
        text = json.dumps(current, indent=0, separators=(",", ":"), ensure_ascii=True) + "\n"
        args.out.write_text(text)  # after each library: an interrupted run keeps what it read
    print("\n".join(log))
    print(f"{args.out.name}: {len(text.encode()):,} bytes, {len(current['libraries'])} libraries, "
          f"{time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
