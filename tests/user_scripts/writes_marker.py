"""A program that leaves a file behind (so a test can tell whether it ran)."""

import sys

open(sys.argv[1], "w").write("ran")
