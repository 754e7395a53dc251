"""The version, in a module of its own: the package, setup.cfg and the command line read it."""

__version__ = "0.2.0.dev0"
