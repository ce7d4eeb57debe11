"""The build step pyproject.toml's metadata cannot say: libvolley.so into the wheel.

A regular build (`pip install ./bindings/python`, `pip wheel`) puts libvolley.so beside
the package's modules, where volley._lib looks for it first after $VOLLEY_LIB:
  - $VOLLEY_BUILD_DIR set: that CMake build's libvolley.so is copied (no compiling; a
    missing file is an error naming it);
  - otherwise the checkout this directory sits in is configured and only its
    volley_shared target built, in setuptools' temporary build directory.
An editable install (`pip install -e`, what compose/setup.sh does) bundles nothing: the
package then runs from the checkout and loads the checkout's build/libvolley.so.
The wheel is tagged for this platform, since it carries a shared library."""
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]  # bindings/python -> the checkout


def _cmake_build(tmp):
    """Configures the checkout in tmp and builds libvolley.so; returns its path."""
    if not (CHECKOUT / "CMakeLists.txt").exists():
        raise SystemExit(f"volley: no CMakeLists.txt at {CHECKOUT}: build from a checkout of "
                         "volley, or set VOLLEY_BUILD_DIR to a build with libvolley.so")
    tmp.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cmake", "-S", str(CHECKOUT), "-B", str(tmp),
                    "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DVL_WERROR=OFF"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(tmp), "--target", "volley_shared",
                    "-j", str(os.cpu_count() or 1)], check=True)
    return tmp / "libvolley.so"


def _library(tmp):
    """The libvolley.so to bundle: $VOLLEY_BUILD_DIR's, else one built now."""
    given = os.environ.get("VOLLEY_BUILD_DIR")
    if not given:
        return _cmake_build(tmp)
    lib = Path(given).resolve() / "libvolley.so"
    if not lib.exists():
        raise SystemExit(f"volley: VOLLEY_BUILD_DIR={given}: no libvolley.so in it "
                         "(expected a CMake build of volley)")
    return lib


class BuildWithLibrary(build_py):
    """build_py that also copies libvolley.so into the built package (not when editable)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        lib = _library(Path(self.get_finalized_command("build").build_temp) / "cmake")
        dest = Path(self.build_lib) / "volley" / "libvolley.so"
        shutil.copyfile(lib.resolve(), dest)  # the file itself, not the symlink chain
        print(f"volley: bundled {lib.resolve()} as {dest}")


class BinaryDistribution(Distribution):
    """A wheel with a shared library in it: tagged for this platform, not 'any'."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
