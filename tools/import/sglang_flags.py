#!/usr/bin/env python3
"""Writes the flag table of `python -m sglang.launch_server` for `lockstep import sglang`.

Runs SGLang's own argument parser (ServerArgs.add_cli_args) on a CPU, with
tools/conformance/torchstub.py standing in for PyTorch, and prints one line per
option string: the flag, the destination it sets, and how many values it takes
(argparse's nargs: 0, 1, ?, + or *). Usage (see tools/conformance/README.md for
the venv):

    venv/bin/python tools/import/sglang_flags.py --sglang sglang-src \\
        > topologies/import/sglang-0.5.23-flags.tsv
"""
import argparse
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sglang", required=True, help="unzipped SGLang wheel")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "conformance"))
    import torchstub

    torchstub.install()
    sys.path.insert(0, a.sglang)
    import sglang
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    rows = set()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.nargs in (None,):
            nargs = "0" if action.const is not None and action.type is None and isinstance(
                action, (argparse._StoreConstAction,)) else "1"
        else:
            nargs = str(action.nargs)
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                               argparse._StoreConstAction, argparse._CountAction)):
            nargs = "0"
        elif type(action).__name__.startswith("Deprecated") and action.nargs == 0:
            nargs = "0"
        for option in action.option_strings:
            if option.startswith("--"):
                rows.add((option, action.dest, nargs))
    version = getattr(sglang, "__version__", "?")
    print(f"# python -m sglang.launch_server {version}: flag, dest, nargs "
          f"(tools/import/sglang_flags.py)")
    for option, dest, nargs in sorted(rows):
        print(f"{option}\t{dest}\t{nargs}")
    print(f"{len(rows)} flags", file=sys.stderr)


if __name__ == "__main__":
    main()
