"""What a command of ``python -m app`` raises for the operator (any part's code may). Its own module: the CLI
imports it before anything heavy is loaded."""


class CommandLineError(Exception):
    """A command that cannot go on as invoked: one line, exit 2."""


class OperatorError(Exception):
    """A problem the operator must fix (bad key material, a refused account operation): its message, one line per
    line, prefixed with the command; exit 1. A part's own errors subclass it, so the CLI need not know them."""
