"""``gpuviz doctor``: what this machine has of what gpuviz needs, in plain words, with the fix for each problem.

It checks Qt's platform plugins (and the system libraries they lack), the display, that Qt starts and finds
fonts, the versions of numpy, numba and numba-cuda and whether they fit together, whether a CUDA GPU and its
driver are there and usable, the cache folder, and write access where recordings go. Anything that could hang
or abort (Qt starting, numba importing, the CUDA driver) runs in a subprocess with a timeout. The exit status
is 1 when there is a problem (each is printed with its fix), else 0; notes (no GPU, a plugin this session does
not use) are not problems.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import qt_platform as qp
from .model.index import cache_dir
from .version import __version__

OK, NOTE, PROBLEM = "ok", "note", "PROBLEM"


@dataclass
class Finding:
    status: str  # OK, NOTE or PROBLEM
    topic: str
    text: str
    fix: list[str] = field(default_factory=list)  # what to run or do, for a problem (and a note where useful)


def _run(cmd, timeout: float, env=None) -> tuple[int | None, str]:
    """(exit status, stdout + stderr); status None when it did not finish in ``timeout`` or could not start."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {timeout:.0f} s"
    except OSError as exc:
        return None, str(exc)
    return done.returncode, (done.stdout or "") + (done.stderr or "")


def check_plugins(env) -> list[Finding]:
    """Each of Qt's window platforms (xcb, wayland): does its plugin load, and what does it lack."""
    session = [qp._family(p) for p in qp.session_platforms(env)]
    findings = []
    for name in qp.CHECKED:
        check = qp.check_plugin(name, env)
        topic = f"Qt platform plugin {name}"
        used = name in session
        if check.loads:
            findings.append(Finding(OK, topic, f"loads ({check.plugin})"))
            continue
        libs = [m for m in check.missing if not qp._qt_own(m)]
        what = (f"does not load: missing {', '.join(check.missing)}" if check.missing
                else f"does not load: {check.load_error}")
        fix = qp.fix_lines(check) + [f"  {e}" for e in check.evidence]
        if used:
            findings.append(Finding(PROBLEM, topic, what + " (this session's window needs it)", fix))
        else:
            findings.append(Finding(NOTE, topic, what + f" (not used here; needed for a window on "
                                    f"{'X11' if name == 'xcb' else 'Wayland'})", fix if libs else []))
    return findings


def check_display(env) -> Finding:
    platforms = qp.session_platforms(env)
    if not platforms:
        return Finding(OK, "display", f"{platform.system()}: Qt uses the system's own windows")
    families = [qp._family(p) for p in platforms]
    if not any(f in qp.CHECKED for f in families):
        return Finding(OK, "display", f"QT_QPA_PLATFORM={env.get('QT_QPA_PLATFORM')}: no display needed (windows "
                       f"are drawn offscreen: snapshots, exports and tests work, `gpuviz` shows nothing)")
    problems = []
    for p in platforms:
        if qp._family(p) not in qp.CHECKED:
            return Finding(OK, "display", f"platforms {';'.join(platforms)}: Qt falls back to {p}")
        problem = qp.display_problem(p, env, connect=True)
        if not problem:
            where = env.get("DISPLAY") if qp._family(p) == "xcb" else env.get("WAYLAND_DISPLAY")
            return Finding(OK, "display", f"{'X11' if qp._family(p) == 'xcb' else 'Wayland'} display {where} answers")
        problems.append(problem)
    return Finding(NOTE, "display", "; ".join(problems) + ": the window cannot open here",
                   ["on a desktop, run gpuviz from a terminal of the desktop session; over ssh, `ssh -X`",
                    "without a window: `gpuviz snapshot`, `gpuviz export` (they draw offscreen)"])


_QT_PROBE = r"""
import json, sys
from PySide6.QtGui import QGuiApplication, QFontDatabase
app = QGuiApplication(sys.argv[:1])
print(json.dumps({"platform": app.platformName(), "fonts": len(QFontDatabase.families())}))
"""
_FONT_PACKAGES = {"apt": "fonts-dejavu-core", "dnf": "dejavu-sans-fonts", "pacman": "ttf-dejavu",
                  "zypper": "dejavu-fonts"}


def check_qt_starts(env, plugins_load: bool) -> list[Finding]:
    """Qt started in a subprocess on the session's platform (offscreen where the session has no display): does it
    come up, and with how many font families."""
    sub_env = dict(env)
    platforms = qp.session_platforms(env)
    if platforms and any(qp._family(p) in qp.CHECKED for p in platforms) and (
            not plugins_load or all(qp.display_problem(p, env) for p in platforms)):
        sub_env["QT_QPA_PLATFORM"] = "offscreen"  # the window platform is reported above; fonts still count
    status, out = _run([sys.executable, "-c", _QT_PROBE], timeout=60, env=sub_env)
    name = sub_env.get("QT_QPA_PLATFORM") or "the session's platform"
    last = out.strip().splitlines()[-1] if out.strip() else ""
    if status != 0:
        lines = [line for line in out.strip().splitlines() if line.strip()][-4:]
        return [Finding(PROBLEM, "Qt", f"does not start on {name} ({'exit ' + str(status) if status is not None else out})",
                        ["what Qt said:", *[f"  {line}" for line in lines],
                         "install the libraries the plugin checks above name; `bash dev test` installs the offscreen "
                         "set on Debian/Ubuntu"])]
    info = json.loads(last)
    findings = [Finding(OK, "Qt", f"starts on {info['platform']}")]
    manager = qp.package_manager()
    if info["fonts"] == 0:
        fix = [qp.install_command(manager, [_FONT_PACKAGES[manager]])] if manager else ["install a font (DejaVu)"]
        findings.append(Finding(PROBLEM, "fonts", "Qt finds no font: every label would be blank", fix))
    else:
        findings.append(Finding(OK, "fonts", f"{info['fonts']} font families"))
    return findings


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _numpy_specs(dist: str) -> list[str]:
    """The numpy requirements ``dist`` declares (its metadata), e.g. ['numpy>=2.0,<2.5']."""
    from importlib import metadata

    try:
        reqs = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return []
    return [r.split(";")[0].strip().replace(" ", "") for r in reqs
            if r.replace(" ", "").lower().startswith("numpy") and "extra==" not in r.replace(" ", "")]


def _fits(version: str, spec: str) -> bool | None:
    try:
        from packaging.requirements import Requirement
    except ImportError:
        return None
    return Requirement(spec).specifier.contains(version, prereleases=True)


def _module_found(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def check_numba() -> list[Finding]:
    findings = []
    numpy_v, numba_v, cuda_v = _version("numpy"), _version("numba"), _version("numba-cuda")
    from importlib import metadata

    try:
        wanted = {r.split(";")[0].replace(" ", "").split("==")[0]: r.split(";")[0].replace(" ", "")
                  for r in (metadata.requires("gpuviz") or []) if "extra==" not in r.replace(" ", "")}
    except metadata.PackageNotFoundError:
        wanted = {}
    for dist, version, module in (("numpy", numpy_v, "numpy"), ("numba", numba_v, "numba"),
                                  ("numba-cuda", cuda_v, "numba_cuda")):
        pin = wanted.get(dist, dist)
        if version is None or not _module_found(module):
            findings.append(Finding(PROBLEM, dist, "is not installed" if version is None else
                                    f"{version} is installed but `import {module}` finds nothing",
                                    [f"pip install '{pin}'"]))
    if findings:
        return findings
    for dist in ("numba", "numba-cuda", "gpuviz"):
        for spec in _numpy_specs(dist):
            if _fits(numpy_v, spec) is False:
                findings.append(Finding(PROBLEM, "numpy", f"{numpy_v} does not fit {dist}'s {spec}",
                                        [f"pip install '{wanted.get('numpy', spec)}'"]))
    code = "import numba, numba_cuda\nfrom numba import cuda\nprint(numba.__version__, cuda.__name__)"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    status, out = _run([sys.executable, "-c", code], timeout=120, env=env)
    if status != 0:
        lines = [line for line in out.strip().splitlines() if line.strip()][-3:]
        findings.append(Finding(PROBLEM, "numba", f"does not import ({'exit ' + str(status) if status is not None else out})",
                                ["what Python said:", *[f"  {line}" for line in lines],
                                 f"pip install '{wanted.get('numba', 'numba')}' '{wanted.get('numba-cuda', 'numba-cuda')}' "
                                 f"'{wanted.get('numpy', 'numpy')}'"]))
    if not findings:
        findings.append(Finding(OK, "numba", f"numpy {numpy_v}, numba {numba_v}, numba-cuda {cuda_v}: they import and "
                                f"fit together ({', '.join(_numpy_specs('numba') + _numpy_specs('gpuviz')) or 'no pins'})"))
    return findings


_GPU_PROBE = r"""
import json
from numba import cuda
out = {"available": bool(cuda.is_available())}
if out["available"]:
    d = cuda.get_current_device()
    out["name"] = d.name.decode() if isinstance(d.name, bytes) else str(d.name)
    out["cc"] = list(d.compute_capability)
    from numba.cuda.cudadrv import driver
    out["driver"] = driver.driver.get_version()
print(json.dumps(out))
"""


def check_gpu() -> Finding:
    """A CUDA GPU and driver: nvidia-smi and numba, each in a subprocess with a timeout (a wedged driver hangs)."""
    smi = shutil.which("nvidia-smi")
    gpus = ""
    if smi:
        status, out = _run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], timeout=20)
        if status != 0:
            return Finding(PROBLEM, "CUDA GPU", f"nvidia-smi fails ({out.strip().splitlines()[-1] if out.strip() else status})",
                           ["the NVIDIA driver is installed but not working: reboot after a driver update, or "
                            "reinstall the driver; gpuviz's CPU executor works meanwhile"])
        gpus = "; ".join(line.strip() for line in out.strip().splitlines())
    has_libcuda = any(Path(d, "libcuda.so.1").exists() for d in
                      ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib", "/usr/lib"))
    if not smi and not has_libcuda:
        return Finding(NOTE, "CUDA GPU", "none here (no nvidia-smi, no libcuda.so.1): kernels run on gpuviz's CPU "
                       "executor, and the timings of a real GPU are shown from recordings, labelled as such")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    status, out = _run([sys.executable, "-c", _GPU_PROBE], timeout=90, env=env)
    if status != 0:
        return Finding(PROBLEM, "CUDA GPU", f"{gpus or 'a driver library'} is there but numba cannot use it "
                       f"({out.strip().splitlines()[-1] if out.strip() else 'exit ' + str(status)})",
                       ["numba-cuda needs a driver for CUDA 12 or later: update the NVIDIA driver"])
    info = json.loads(out.strip().splitlines()[-1])
    if not info["available"]:
        return Finding(PROBLEM if gpus else NOTE, "CUDA GPU", f"{gpus or 'libcuda.so.1 is installed, but'} numba "
                       "finds no usable GPU", ["check `nvidia-smi`; in a container, run it with the GPU passed in"]
                       if gpus else [])
    return Finding(OK, "CUDA GPU", f"{info['name']} (compute capability {'.'.join(map(str, info['cc']))}), driver "
                   f"CUDA {'.'.join(map(str, info['driver']))}: `--backend gpu` records on it")


def _writable(folder: Path) -> str:
    """'' when a file can be made in ``folder`` (made first if missing), else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".gpuviz-doctor-"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return ""


def check_folders() -> list[Finding]:
    findings = []
    places = [("cache folder", cache_dir(), "the index of each opened trace is kept there (opening again is faster)",
               "set XDG_CACHE_HOME to a folder you can write"),
              ("recordings", Path.cwd(), "`gpuviz run SCRIPT.py` writes SCRIPT.gpuviz in the current folder",
               "run from a folder you can write, or give -o PATH"),
              ("temporary folder", Path(tempfile.gettempdir()), "captures and exports write there first",
               "set TMPDIR to a folder you can write")]
    numba_cache = os.environ.get("NUMBA_CACHE_DIR")
    if numba_cache:
        places.append(("numba cache", Path(numba_cache), "NUMBA_CACHE_DIR", "unset NUMBA_CACHE_DIR or make it writable"))
    for topic, folder, why, fix in places:
        problem = _writable(folder)
        if problem:
            findings.append(Finding(PROBLEM, topic, f"{folder} is not writable ({problem}); {why}", [fix]))
        else:
            findings.append(Finding(OK, topic, f"{folder} is writable"))
    return findings


def _system() -> str:
    try:
        name = platform.freedesktop_os_release().get("PRETTY_NAME", "")
    except OSError:
        name = ""
    return f"{platform.system()} {name}".strip()


def diagnose(env=None) -> list[Finding]:
    env = os.environ if env is None else env
    findings = check_plugins(env)
    findings.append(check_display(env))
    findings += check_qt_starts(env, plugins_load=not any(f.status == PROBLEM for f in findings))
    findings += check_numba()
    findings.append(check_gpu())
    findings += check_folders()
    return findings


def report(findings, out=sys.stdout) -> int:
    print(f"gpuviz doctor: gpuviz {__version__}, Python {platform.python_version()}, {_system()}", file=out)
    width = max(len(f.topic) for f in findings)
    for f in findings:
        print(f"  {f.status:<8} {f.topic:<{width}}  {f.text}", file=out)
        for line in f.fix:
            print(f"  {'':<8} {'':<{width}}    {line}", file=out)
    problems = [f for f in findings if f.status == PROBLEM]
    if problems:
        print(f"{len(problems)} problem(s): {', '.join(f.topic for f in problems)}. Each says its fix above.", file=out)
        return 1
    print("No problems: gpuviz has what it needs here.", file=out)
    return 0


def main(argv=None) -> int:
    return report(diagnose())
