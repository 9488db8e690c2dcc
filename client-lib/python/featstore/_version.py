"""featstore's release (written by cmake/version.cmake from project(VERSION) in CMakeLists.txt)."""
__version__ = "1.5.0"
