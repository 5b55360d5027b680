"""The words free text states an environment in (envcheck/sources/reports/prose/): keys, versions, package names, OS and
platform names, each mapped to the fact it states. Pure functions over one token or one short text.
"""

from __future__ import annotations

from typing import NamedTuple

from envcheck.support.patterns import lazy

__all__ = ["KEYS", "KNOWN_PACKAGES", "SPLIT", "Platform", "is_package_name", "key_of", "machine_of", "package_of",
           "platform_of", "torch_version_of", "version_of"]

# A sentence or a value cut into words: at spaces and punctuation, never inside a version or a package name.
SPLIT = lazy(r"[\s,;|()\[\]{}<>\"'`*，；（）。]+")

# A version as people write one: "2.1.2", "v2.1", "2.1.2+cu121", "2.10.0.dev20251008", "2.5.1.post1", "535.54.03".
# Every quantifier bounded and none side by side on the same characters: a token is matched whole, in linear time.
_VERSION = lazy(r"\d{1,4}(?:\.\d{1,8}){1,3}(?:(?:a|b|rc|\.?post|\.?dev)\d{0,8})?(?:\+[A-Za-z0-9]{1,16}"
                r"(?:\.[A-Za-z0-9]{1,16}){0,3})?")
_NAME = lazy(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
_CU_TAG = lazy(r"cu\d{2,3}")
_TRIM = "`'\"*_,;:!?()[]{}<>"

# Normalised key (lower case, markdown and a trailing "version" removed) -> the fact it states.
KEYS: dict[str, str] = {
    **dict.fromkeys(("torch", "pytorch", "torch.__version__", "pytorch/torch", "torch/pytorch", "pytorch build",
                     "print torch.__version__"), "torch"),
    **dict.fromkeys(("cuda used to build pytorch", "torch cuda", "pytorch cuda", "torch.version.cuda", "cuda torch",
                     "cuda pytorch", "torch cuda build", "pytorch cuda build", "cuda build of pytorch",
                     "print torch.version.cuda", "pytorch index", "torch index", "index", "index url", "index-url",
                     "wheel index", "torch wheel", "pytorch wheel"), "torch_cuda"),
    **dict.fromkeys(("cuda", "cuda runtime", "cuda/cudnn", "cuda / cudnn", "cuda and cudnn", "cuda & cudnn",
                     "system cuda", "installed cuda"), "cuda"),
    **dict.fromkeys(("cuda driver", "driver cuda", "nvidia-smi cuda", "cuda nvidia-smi", "max cuda", "cuda umd"),
                    "driver_cuda"),
    **dict.fromkeys(("nvcc", "nvcc -v", "nvcc --version", "cuda toolkit", "cuda-toolkit", "cudatoolkit",
                     "cuda compiler", "cuda compilation tools"), "toolkit"),
    **dict.fromkeys(("cudnn",), "cudnn"),
    **dict.fromkeys(("driver", "nvidia driver", "gpu driver", "nvidia-driver", "display driver", "nvidia gpu driver",
                     "graphics driver", "nvidia-smi driver"), "driver"),
    **dict.fromkeys(("gpu", "gpus", "gpu model", "gpu models", "gpu type", "gpu name", "gpu models and configuration",
                     "graphics card", "graphics", "video card", "card", "hardware", "device", "devices",
                     "accelerator", "gpu hardware", "gpu info", "nvidia gpu", "gpu device", "gpu card", "gpu(s)",
                     "model", "module", "board", "device model"), "gpu"),
    **dict.fromkeys(("python", "python3", "py", "python interpreter", "interpreter"), "python"),
    **dict.fromkeys(("os", "platform", "system", "operating system", "os platform", "os platform and distribution",
                     "distro", "distribution", "linux distro", "linux distribution", "os/platform", "environment",
                     "os version", "system os", "host os", "os and version", "os & version", "linux", "ubuntu",
                     "windows", "macos", "debian", "centos", "wsl", "wsl2", "distro version"), "os"),
    **dict.fromkeys(("glibc", "libc", "ldd", "ldd --version", "glibc/libc"), "libc"),
    **dict.fromkeys(("architecture", "arch", "cpu architecture", "machine", "cpu arch"), "machine"),
}
_KEY_SUFFIXES = (" version", " versions", " ver", " info", " information", " installed", " used")
# A parenthesis in a key that is a template's hint, not part of the key: "PyTorch Version (e.g., 1.0)", "(GPU?)".
_HINTS = ("e.g", "eg.", "e. g", "?", "if ", "example", "optional", "applicable")

# Package names people write in place of the distribution's: pytorch is torch; flash_attn imports flash-attn.
_ALIASES = {"pytorch": "torch", "flash-attention": "flash-attn", "flash_attn": "flash-attn",
            "flashattention": "flash-attn", "pytorch-cuda": "", "torch-cuda": ""}
# Distributions named in prose alone ("transformers 4.40.1", "vllm: 0.6.3") that are read as a package; any other name
# counts only in a `name==version` pin, a "Package | Version" table or a list of such lines.
KNOWN_PACKAGES = frozenset((
    "torch", "torchvision", "torchaudio", "torchtext", "torchdata", "torchao", "torchmetrics", "transformers",
    "accelerate", "diffusers", "peft", "trl", "datasets", "tokenizers", "safetensors", "huggingface-hub",
    "huggingface_hub", "bitsandbytes", "xformers", "flash-attn", "triton", "deepspeed", "vllm", "sglang", "numpy",
    "scipy", "pandas", "pyarrow", "onnx", "onnxruntime", "onnxruntime-gpu", "tensorrt", "lightning",
    "pytorch-lightning", "timm", "mmcv", "mmcv-full", "mmengine", "mmdet", "detectron2", "apex", "jax", "jaxlib",
    "tensorflow", "sentence-transformers", "optimum", "auto-gptq", "autoawq", "unsloth", "cupy", "numba", "protobuf",
    "fsspec", "gradio", "einops", "ninja", "setuptools", "ctranslate2", "faster-whisper", "openai-whisper",
    "pyannote.audio", "llama-cpp-python", "exllamav2", "mamba-ssm", "causal-conv1d", "torch-geometric",
    "torch_geometric", "torch-scatter", "torch-sparse", "pyg-lib", "dgl", "kornia", "ultralytics", "tensorboard",
    "nvidia-cudnn-cu12", "nvidia-cudnn-cu11", "nvidia-nccl-cu12", "liger-kernel", "megatron-core",
    "transformer-engine", "torch-tensorrt", "spconv", "pytorch3d", "open-clip-torch", "lmdeploy", "llamafactory",
))

# Distribution release -> the glibc it ships, for the releases whose glibc is certain.
_GLIBC = {
    ("ubuntu", "14.04"): "2.19", ("ubuntu", "16.04"): "2.23", ("ubuntu", "18.04"): "2.27", ("ubuntu", "20.04"): "2.31",
    ("ubuntu", "22.04"): "2.35", ("ubuntu", "24.04"): "2.39",
    ("debian", "10"): "2.28", ("debian", "11"): "2.31", ("debian", "12"): "2.36", ("centos", "7"): "2.17",
    ("centos", "8"): "2.28", ("rhel", "7"): "2.17", ("rhel", "8"): "2.28", ("rhel", "9"): "2.34",
    ("rocky", "8"): "2.28", ("rocky", "9"): "2.34", ("almalinux", "8"): "2.28", ("almalinux", "9"): "2.34",
}
_DISTROS = ("ubuntu", "debian", "centos", "rhel", "rocky", "almalinux", "fedora", "opensuse", "manjaro", "mint")
_DISPLAY = {"centos": "CentOS", "rhel": "RHEL", "almalinux": "AlmaLinux", "opensuse": "openSUSE"}
_LINUX_WORDS = frozenset(("linux", "ubuntu", "debian", "centos", "rhel", "rocky", "almalinux", "fedora", "opensuse",
                          "manjaro", "archlinux", "arch-linux", "pop!_os", "popos", "gentoo", "nixos"))
# The words platform_of reads; any other word is skipped at once.
_PLATFORM_WORD = lazy(r"ubuntu|debian|centos|rhel|rocky|almalinux|fedora|opensuse|manjaro|mint|linux|arch|"
                      r"pop|gentoo|nixos|red$|windows|win1[01]$|wsl|mac|osx$|darwin$|apple$|colab$|kaggle$|"
                      r"jetson$|jetpack$|l4t$")
_APPLE_CHIPS = frozenset(("m1", "m2", "m3", "m4", "m5"))


class Platform(NamedTuple):
    """What OS words state: sys.platform, and what more they say (None: not said)."""

    platform: str  # "linux", "win32", "darwin"
    machine: str | None  # "x86_64", "aarch64", "arm64"
    libc: tuple[str, str] | None  # ("glibc", "2.35") for a release whose glibc is certain
    label: str  # what was read, for the report: "Ubuntu 22.04", "WSL2", "macOS (Apple silicon)"
    wsl: bool = False


def _trim(token: str) -> str:
    return token.strip(_TRIM)


def version_of(token: str) -> str | None:
    """The version a token is ("v2.1.0" -> "2.1.0", "2.1.2+cu121,"), None for any other token."""
    text = _trim(token)
    if text[:1] in ("v", "V"):
        text = text[1:]
    text = text.rstrip(".")
    return text if len(text) <= 48 and _VERSION.fullmatch(text) else None


def torch_version_of(version: str) -> str:
    """A torch version as a person wrote it, without a local part that is no build torch has ("2.0.1+cu11.8" is
    2.0.1: "+cu118" would be CUDA 11.8, but what was meant is not certain)."""
    public, plus, local = version.partition("+")
    if plus and local.startswith("cu") and not _CU_TAG.fullmatch(local):
        return public
    return version


def is_package_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def package_of(name: str) -> str | None:
    """The distribution a written name means ("PyTorch" -> "torch", "flash_attn" -> "flash-attn"); None for a name
    that is no package name, "" for one that is no distribution of its own (pytorch-cuda)."""
    text = _trim(name).lower()
    if not is_package_name(text):
        return None
    return _ALIASES.get(text, text)


def _without_hints(text: str) -> str:
    out: list[str] = []
    rest = text
    while "(" in rest:
        before, _, after = rest.partition("(")
        inside, closed, rest = after.partition(")")
        out.append(before)
        if not closed:
            break
        if not any(hint in inside for hint in _HINTS):
            out.append(f" {inside} ")
    else:
        out.append(rest)
    return " ".join("".join(out).split())


def key_of(text: str) -> str:
    """A key as KEYS spells it: "**PyTorch Version (GPU?)**" -> "pytorch", "CUDA (torch)" -> "cuda torch"."""
    key = _without_hints(text.strip().strip("*_`#-•").strip().lower().replace("`", "").replace("*", ""))
    changed = True
    while changed:
        changed = False
        for suffix in _KEY_SUFFIXES:
            if key.endswith(suffix) and len(key) > len(suffix):
                key, changed = key[:-len(suffix)].rstrip(), True
    if key.startswith(("version of ", "versions of ")):
        key = key.partition(" of ")[2]
    return key


def platform_of(words: list[str]) -> Platform | None:
    """The platform lower-case `words` name: "windows 11", "wsl2", "macos" (with "intel" or an Apple chip), "ubuntu
    22.04", "centos 7", "colab", "kaggle", "jetson"; None when they name none, or name two that disagree (WSL2 is
    Linux on a Windows host: with it, Windows is the host, not the platform)."""
    found: list[Platform] = []
    named = [(index, word) for index, word in enumerate(words) if _PLATFORM_WORD.match(word)]
    if not named:
        return None
    wsl = any(w.startswith("wsl") for _, w in named)
    apple = any(w in _APPLE_CHIPS or w in ("intel", "os", "silicon") for w in words)
    for index, word in named:
        after = words[index + 1] if index + 1 < len(words) else ""
        if after in ("release", "linux") and word != "linux":  # "CentOS release 6.7", "Rocky Linux 9"
            after = words[index + 2] if index + 2 < len(words) else ""
        if word == "red" and after == "hat":
            word, after = "rhel", next((w for w in words[index + 2:index + 5] if version_of(w)), "")
        if word.startswith(_DISTROS) or word in _LINUX_WORDS:
            found.append(_linux(word, after))
        elif word.startswith("windows") or word in ("win10", "win11"):
            found.append(Platform("win32", None, None, f"Windows {after}" if after in ("10", "11") else "Windows"))
        elif word in ("macos", "osx", "macbook", "darwin") or (word == "mac" and apple) \
                or (word == "apple" and (after in _APPLE_CHIPS or after == "silicon")):
            found.append(Platform("darwin", _mac_machine(words), None, "macOS"))
        elif word in ("colab", "kaggle"):
            found.append(Platform("linux", "x86_64", None, word.capitalize()))
        elif word in ("jetson", "jetpack", "l4t"):
            found.append(Platform("linux", "aarch64", None, "Jetson"))
    if wsl:
        found = [p for p in found if p.platform != "win32"] + [Platform("linux", None, None, "WSL2", wsl=True)]
    if not found or any(p.platform != found[0].platform for p in found):
        return None
    machines = {p.machine for p in found if p.machine}
    libcs = {p.libc for p in found if p.libc}
    if len(machines) > 1 or len(libcs) > 1:
        return None
    labels = list(dict.fromkeys(p.label for p in found))
    return Platform(found[0].platform, next(iter(machines), None), next(iter(libcs), None), ", ".join(labels[:3]),
                    wsl)


def _linux(word: str, after: str) -> Platform:
    name = next((d for d in _DISTROS if word.startswith(d)), word)
    release = word[len(name):] or after
    release = release if version_of(release) or (release.isdigit() and len(release) <= 2) else ""
    if name == "ubuntu":  # the release is year.month: 22.04 and 22.10 differ
        libc = _GLIBC.get((name, ".".join(release.split(".")[:2])))
    else:
        libc = _GLIBC.get((name, release.split(".")[0]))
    label = f"{_DISPLAY.get(name, name.capitalize())} {release}".strip() if name in _DISTROS else "Linux"
    return Platform("linux", None, None if libc is None else ("glibc", libc), label)


def _mac_machine(words: list[str]) -> str | None:
    if "intel" in words:
        return "x86_64"
    if any(w in _APPLE_CHIPS or w in ("arm64", "silicon") for w in words):
        return "arm64"
    return None


def machine_of(word: str) -> str | None:
    """x86_64 / aarch64 / arm64 as an architecture word names it."""
    word = _trim(word).lower()
    if word in ("x86_64", "x86-64", "amd64", "x64"):
        return "x86_64"
    if word in ("aarch64", "arm64"):
        return word
    return None
