"""The parser's fast constructors (`_build`) build exactly what the model's dataclasses build."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, get_type_hints

import pytest

from starforge.contract import _build, _model

BUILDERS = {name: getattr(_build, name) for name in _build.__all__ if name.startswith("new_")}


def _built_class(builder: Any) -> type:
    cls = get_type_hints(builder)["return"]
    assert isinstance(cls, type)
    return cls


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_builder_matches_its_dataclass(name: str) -> None:
    builder = BUILDERS[name]
    cls = _built_class(builder)
    params = list(inspect.signature(builder).parameters)
    assert params == [f.name for f in dataclasses.fields(cls)], "parameters must be the fields, in order"
    values = [object() for _ in params]
    built = builder(*values)
    assert type(built) is cls
    assert built == cls(*values) and repr(built) == repr(cls(*values))
    assert all(getattr(built, p) is v for p, v in zip(params, values, strict=True))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, params[0], None)


def test_every_model_dataclass_has_a_builder() -> None:
    model = {getattr(_model, n) for n in _model.__all__ if dataclasses.is_dataclass(getattr(_model, n))}
    assert model <= {_built_class(b) for b in BUILDERS.values()}
