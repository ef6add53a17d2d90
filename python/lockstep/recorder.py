"""DecisionRecorder: writes the lockstep decision log from an engine's
all-reduce entry point. Pure Python (standard library only): no torch, no
compiled code.

One directory per run, one file per rank, ``rank-<R>.jsonl``, JSON lines:

* line 1, the header::

    {"format": "lockstep-decision-log", "version": 1, "rank": R, "world": W,
     "source": "python", "scenario": null}

* then one line per dispatched all-reduce::

    {"call": k, "group": "tp", "peers": [0, 1, 2, 3], "seq": n,
     "site": "step 1 layer 0 attn_out", "tokens": T, "hidden": H, "dtype": "bf16",
     "backend": "fused", "algorithm": "one_shot", "inputs": {...}}

  ``call`` counts this rank's calls from 0, ``seq`` its calls on that group
  from 0; both are numbered by the recorder. Every line is flushed as written,
  so a run that hangs or dies leaves its log up to the last call.

    with DecisionRecorder("logs/run-1", rank=0, world=4) as rec:
        rec.record(group="tp", peers=[0, 1, 2, 3], site="step 0 layer 0 attn_out",
                   tokens=8, hidden=4096, dtype="bf16", backend="custom")
"""

from __future__ import annotations

import json
import os
from typing import IO, Any, Dict, Iterable, Mapping, Optional

__all__ = ["DecisionRecorder", "read_log", "FORMAT", "VERSION", "SOURCES", "DTYPES"]

FORMAT = "lockstep-decision-log"
VERSION = 1
SOURCES = ("python", "sim", "hw")
DTYPES = ("bf16", "fp16", "fp32")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_name(what: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"DecisionRecorder: {what} must be a non-empty string, got {value!r}")
    if "\n" in value or "\r" in value:
        raise ValueError(f"DecisionRecorder: {what} must be one line, got {value!r}")
    return value


class DecisionRecorder:
    """Writes ``<directory>/rank-<rank>.jsonl`` for one rank of one run.

    ``directory`` is created if missing; an existing log of the same rank is
    refused (FileExistsError) rather than appended to or overwritten.
    """

    def __init__(
        self,
        directory: "str | os.PathLike[str]",
        rank: int,
        world: int,
        source: str = "python",
        scenario: Optional[str] = None,
    ) -> None:
        if not _is_int(world) or world < 1:
            raise ValueError(f"DecisionRecorder: world must be an integer >= 1, got {world!r}")
        if not _is_int(rank) or not 0 <= rank < world:
            raise ValueError(
                f"DecisionRecorder: rank must be an integer in [0, {world}), got {rank!r}"
            )
        if source not in SOURCES:
            raise ValueError(
                f"DecisionRecorder: source must be one of {', '.join(SOURCES)}, got {source!r}"
            )
        if scenario is not None:
            _check_name("scenario", scenario)
        self.directory: str = os.fspath(directory)
        self.rank: int = rank
        self.world: int = world
        self.source: str = source
        self.scenario: Optional[str] = scenario
        self.path: str = os.path.join(self.directory, f"rank-{rank}.jsonl")
        self._calls = 0
        self._seq: Dict[str, int] = {}
        self._peers: Dict[str, list] = {}
        os.makedirs(self.directory, exist_ok=True)
        # "x": never overwrite another run's log.
        self._file: Optional[IO[str]] = open(self.path, "x", encoding="utf-8")
        self._write(
            {
                "format": FORMAT,
                "version": VERSION,
                "rank": rank,
                "world": world,
                "source": source,
                "scenario": scenario,
            }
        )

    @property
    def calls(self) -> int:
        """Calls recorded so far (the next call's index)."""
        return self._calls

    def seq(self, group: str) -> int:
        """Calls recorded so far on ``group`` (the next call's seq there)."""
        return self._seq.get(group, 0)

    def _write(self, line: Mapping[str, Any]) -> None:
        assert self._file is not None
        self._file.write(json.dumps(line, separators=(", ", ": "), allow_nan=False) + "\n")
        self._file.flush()

    def record(
        self,
        *,
        group: str,
        peers: Iterable[int],
        site: str,
        tokens: int,
        hidden: int,
        dtype: str,
        backend: str,
        algorithm: Optional[str] = None,
        inputs: Optional[Mapping[str, Any]] = None,
    ) -> Dict[str, Any]:
        """Writes one dispatched all-reduce and returns the line written.

        ``peers``: the group's global ranks, in group order, this rank among
        them; the same group name must keep the same peers for the whole run.
        ``inputs``: the predicate inputs the engine decided on, names to bool,
        int or str values.
        """
        if self._file is None:
            raise ValueError("DecisionRecorder: record() after close()")
        _check_name("group", group)
        if isinstance(peers, (str, bytes)):
            raise ValueError(f"DecisionRecorder: peers must be a list of ranks, got {peers!r}")
        peer_list = list(peers)
        if not peer_list or not all(_is_int(p) and 0 <= p < self.world for p in peer_list):
            raise ValueError(
                f"DecisionRecorder: peers must be a non-empty list of ranks in [0, {self.world}),"
                f" got {peer_list!r}"
            )
        if len(set(peer_list)) != len(peer_list):
            raise ValueError(f"DecisionRecorder: peers has repeated ranks: {peer_list!r}")
        if self.rank not in peer_list:
            raise ValueError(
                f"DecisionRecorder: rank {self.rank} is not among the peers {peer_list!r} of "
                f"group {group!r}"
            )
        known = self._peers.get(group)
        if known is not None and known != peer_list:
            raise ValueError(
                f"DecisionRecorder: group {group!r} had peers {known!r}, now {peer_list!r}: one "
                f"group name names one peer set for the whole run"
            )
        _check_name("site", site)
        for what, value in (("tokens", tokens), ("hidden", hidden)):
            if not _is_int(value) or value < 0:
                raise ValueError(
                    f"DecisionRecorder: {what} must be a non-negative integer, got {value!r}"
                )
        if dtype not in DTYPES:
            raise ValueError(
                f"DecisionRecorder: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}"
            )
        _check_name("backend", backend)
        if algorithm is not None:
            _check_name("algorithm", algorithm)
        inputs_out: Dict[str, Any] = {}
        for name, value in (inputs or {}).items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"DecisionRecorder: input names must be strings, got {name!r}")
            if not isinstance(value, (bool, int, str)):
                raise ValueError(
                    f"DecisionRecorder: input {name!r} must be a bool, int or str, got "
                    f"{type(value).__name__} {value!r}"
                )
            inputs_out[name] = value
        line = {
            "call": self._calls,
            "group": group,
            "peers": peer_list,
            "seq": self._seq.get(group, 0),
            "site": site,
            "tokens": tokens,
            "hidden": hidden,
            "dtype": dtype,
            "backend": backend,
            "algorithm": algorithm,
            "inputs": inputs_out,
        }
        self._write(line)
        self._calls += 1
        self._seq[group] = self._seq.get(group, 0) + 1
        self._peers[group] = peer_list
        return line

    def close(self) -> None:
        """Closes the file; further record() calls raise ValueError."""
        if self._file is not None:
            self._file.close()
            self._file = None

    @property
    def closed(self) -> bool:
        return self._file is None

    def __enter__(self) -> "DecisionRecorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DecisionRecorder({self.path!r}, calls={self._calls})"


def read_log(path: "str | os.PathLike[str]") -> "tuple[Dict[str, Any], list]":
    """Reads one rank's log: (header, call lines). Checks the header's format."""
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if not lines or lines[0].get("format") != FORMAT:
        raise ValueError(f"{os.fspath(path)}: not a {FORMAT} file (no header line)")
    if lines[0].get("version") != VERSION:
        raise ValueError(
            f"{os.fspath(path)}: version {lines[0].get('version')!r}, this reader knows {VERSION}"
        )
    return lines[0], lines[1:]
