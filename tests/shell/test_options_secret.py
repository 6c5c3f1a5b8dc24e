"""The API key is wrapped once, where it enters, in a `Secret` nothing shows.

Not a repr or a str of the options or their `Connection`, not `attrs.asdict`
of either, not a pickle (refused: a pickle would hold the key in clear). The
model port gets the very `Secret` the options made, and reads the key only to
build a request's headers.
"""

from __future__ import annotations

import copy
import pickle

import attrs
import pytest

from toolreel.adapters import HttpModel, Secret
from toolreel.shell import AgentOptions, Connection
from toolreel.shell.errors import UsageError

KEY = "sk-test-Zq8vN3kR7pW2xY5tB9mC4"


def options() -> AgentOptions:
    return AgentOptions(model="m", api_key=KEY)


def test_the_key_is_a_secret_from_the_moment_it_is_given() -> None:
    given = options()
    assert isinstance(given.api_key, Secret)
    assert given.api_key.value == KEY
    assert given.connection.api_key == Secret(KEY)


@pytest.mark.parametrize(
    "record", [options(), options().connection, Connection(model="m", api_key=KEY)]
)
def test_no_repr_or_str_shows_the_key(record: object) -> None:
    assert KEY not in repr(record)
    assert KEY not in str(record)


@pytest.mark.parametrize("record", [options(), options().connection])
def test_attrs_asdict_keeps_the_secret_not_its_text(record: object) -> None:
    fields = attrs.asdict(record)  # type: ignore[arg-type]
    assert fields["api_key"] == Secret(KEY)
    assert KEY not in str(fields)
    assert KEY not in repr(attrs.astuple(record))  # type: ignore[arg-type]


@pytest.mark.parametrize("record", [options(), options().connection, Secret(KEY)])
def test_pickling_is_refused_without_showing_the_key(record: object) -> None:
    with pytest.raises(UsageError, match="cannot be pickled") as refused:
        pickle.dumps(record)
    assert KEY not in str(refused.value)


def test_copies_keep_the_same_secret() -> None:
    given = options()
    assert copy.deepcopy(given).api_key is given.api_key
    assert copy.copy(given.api_key) is given.api_key


def test_a_secret_cannot_be_changed_in_place() -> None:
    secret = Secret(KEY)
    with pytest.raises(AttributeError):
        secret._value = "other"  # type: ignore[misc]
    assert secret.value == KEY


def test_the_model_port_gets_the_secret_the_options_made() -> None:
    given = options()
    connection = attrs.evolve(given.connection, base_url="http://127.0.0.1:9/v1")
    model = connection.open_model()
    assert isinstance(model, HttpModel)
    assert model._api_key is given.api_key  # wrapped once, at the edge


def test_a_secret_given_is_kept_as_it_is() -> None:
    secret = Secret(f"  {KEY}\n")  # a key read from a file: cleaned as it is wrapped
    given = AgentOptions(model="m", api_key=secret)
    assert given.api_key is secret
    assert given.connection.api_key is secret
    assert secret.value == KEY


def test_a_blank_key_is_no_key() -> None:
    assert AgentOptions(model="m", api_key="  ").api_key is None
    assert Connection(model="m", api_key=Secret("")).api_key is None
