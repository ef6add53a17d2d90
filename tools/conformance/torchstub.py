"""Minimal stand-in for ``torch`` so SGLang's pure-Python decision code can be
imported on a CPU-only machine without PyTorch.

Every ``torch`` / ``torch.*`` import resolves to a StubModule whose unknown
attributes are ``Magic`` placeholders (callable, subscriptable, usable as a
base class or decorator).  Only the pieces the conformance table observes are
real: ``torch.distributed.new_group`` records the rank lists it is given.
Install with ``install()`` BEFORE importing sglang.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

NEW_GROUP_CALLS = []  # list of (ranks, kwargs)


class Magic:
    """A placeholder that tolerates almost any use."""

    def __init__(self, name="torch.?"):
        object.__setattr__(self, "_name", name)

    def __repr__(self):
        return f"<stub {self._name}>"

    def __getattr__(self, item):
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        value = Magic(f"{self._name}.{item}")
        object.__setattr__(self, item, value)
        return value

    def __call__(self, *args, **kwargs):
        # Decorator use: @torch.compile / @torch.no_grad() / @x.register(...)
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Magic):
            return args[0]
        return Magic(f"{self._name}()")

    def __getitem__(self, item):
        return Magic(f"{self._name}[]")

    def __mro_entries__(self, bases):
        return (_stub_base(self._name),)

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __int__(self):
        return 0

    def __index__(self):
        return 0

    def __float__(self):
        return 0.0

    def __len__(self):
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def __or__(self, other):
        return self

    __ror__ = __or__
    __neg__ = __pos__ = __abs__ = lambda self: self
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __or__
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __or__
    __pow__ = __rpow__ = __and__ = __rand__ = __xor__ = __matmul__ = __or__

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def __lt__(self, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__


_BASES = {}


def _stub_base(name):
    base = _BASES.get(name)
    if base is None:
        base = type(name.rsplit(".", 1)[-1], (), {"__init__": lambda self, *a, **k: None,
                                                 "__init_subclass__": classmethod(lambda cls, **k: None),
                                                 "__class_getitem__": classmethod(lambda cls, item: cls)})
        _BASES[name] = base
    return base


# Attributes that must stay absent: SGLang probes them with hasattr() to detect
# non-CUDA platforms (sglang/srt/utils/common.py is_npu/is_hpu/is_xpu/is_mps).
_ABSENT = {"torch": {"npu"}}


class StubModule(types.ModuleType):
    def __getattr__(self, item):
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        if item in _ABSENT.get(self.__name__, ()):
            raise AttributeError(item)
        value = Magic(f"{self.__name__}.{item}")
        setattr(self, item, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    # torch and the GPU-kernel packages, plus heavyweight third-party packages
    # that SGLang imports at module level but whose behaviour the table never
    # observes (image/tokenizer/serving libraries).
    PREFIXES = (
        "torch", "triton", "sgl_kernel", "flashinfer", "torchvision", "torchaudio",
        "PIL", "starlette", "zmq", "aiohttp", "tvm_ffi", "sentencepiece",
        "compressed_tensors", "gguf",
    )

    def find_spec(self, fullname, path, target=None):
        root = fullname.split(".")[0]
        if root in self.PREFIXES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        mod = StubModule(spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module):
        _populate(module)


class _FakeProcessGroup:
    def __init__(self, ranks, backend=None):
        self.ranks = list(ranks)
        self.backend = backend

    def __repr__(self):
        return f"<ProcessGroup {self.ranks}>"


_STATE = {"rank": 0, "world_size": 1, "initialized": True}


def set_world(rank, world_size):
    _STATE["rank"] = rank
    _STATE["world_size"] = world_size


def _populate(module):
    name = module.__name__
    if name == "torch":
        module.__version__ = "0.0.0+stub"
        module.Tensor = _stub_base("torch.Tensor")
        module.dtype = _stub_base("torch.dtype")
        module.device = _stub_base("torch.device")
        module.Size = tuple
        module.Generator = _stub_base("torch.Generator")
        for dt in ("bfloat16", "float16", "float32", "float64", "int8", "int32", "int64",
                   "uint8", "bool", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                   "half", "float", "long", "int", "int16", "float4_e2m1fn_x2", "uint32", "uint64",
                   "float8_e8m0fnu", "int4", "uint16", "complex64"):
            setattr(module, dt, Magic(f"torch.{dt}"))
        module.version = types.SimpleNamespace(cuda=None, hip=None, git_version="stub")
        module.cuda = Magic("torch.cuda")
        object.__setattr__(module.cuda, "is_available", lambda: False)
        object.__setattr__(module.cuda, "device_count", lambda: 0)
        module.inference_mode = lambda *a, **k: (a[0] if a and callable(a[0]) else Magic("inference_mode"))
        module.compile = lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))
    elif name == "torch.library":
        class Library:
            def __init__(self, *a, **k):
                self.m = types.SimpleNamespace(name=a[0] if a and isinstance(a[0], str) else "stub")

            def define(self, *a, **k):
                return None

            def impl(self, *a, **k):
                return None

            def _register_fake(self, *a, **k):
                return None

        module.Library = Library
        module.infer_schema = lambda *a, **k: "()"
    elif name == "torch.distributed":
        class ReduceOp:
            SUM = 0
            MAX = 1
            MIN = 2
            AVG = 3
            PRODUCT = 4
        module.ReduceOp = ReduceOp
        module.ProcessGroup = _FakeProcessGroup
        module.Backend = str
        module.is_initialized = lambda: _STATE["initialized"]
        module.is_available = lambda: True
        module.get_rank = lambda group=None: _STATE["rank"]
        module.get_world_size = lambda group=None: (len(group.ranks) if isinstance(group, _FakeProcessGroup) else _STATE["world_size"])
        module.get_backend = lambda group=None: "nccl"

        def new_group(ranks=None, backend=None, **kwargs):
            ranks = list(ranks) if ranks is not None else list(range(_STATE["world_size"]))
            NEW_GROUP_CALLS.append((ranks, dict(kwargs, backend=backend)))
            return _FakeProcessGroup(ranks, backend)

        module.new_group = new_group
        module.barrier = lambda *a, **k: None
        module.all_reduce = lambda *a, **k: None


def install():
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        for mod in list(sys.modules):
            if mod.split(".")[0] in _Finder.PREFIXES:
                del sys.modules[mod]
        sys.meta_path.insert(0, _Finder())
