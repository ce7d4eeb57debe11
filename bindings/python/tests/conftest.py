"""Tests import the package from this checkout (bindings/python), whatever
the .pth says; libvolley comes from $VOLLEY_LIB (ctest sets it to the build's
libvolley.so) or the package's own search."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
