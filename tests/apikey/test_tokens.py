"""The shape of raw API keys and key ids, and the keyed hash a key is stored under."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from tenantplane.apikey.tokens import (
    KEY_PREFIX,
    hash_key,
    is_key_id,
    looks_like_key,
    new_key_id,
    new_raw_key,
)
from tenantplane.keys import KeyRing, Purpose
from tests.conftest import TEST_SECRET

BODY = "A" * 43


def test_new_keys_and_ids_have_their_shape() -> None:
    for _ in range(200):
        assert looks_like_key(new_raw_key())
        assert is_key_id(new_key_id())


@pytest.mark.parametrize(
    "token",
    [
        KEY_PREFIX + BODY[:-1],  # a digit short
        KEY_PREFIX + BODY + "A",  # a digit over
        "key_" + BODY,  # another prefix
        BODY,  # no prefix
        KEY_PREFIX + BODY[:-1] + "-",  # outside base 62
        KEY_PREFIX + BODY[:-1] + "_",
        KEY_PREFIX + BODY[:-1] + "\u0663",  # a digit, but not an ASCII one
        KEY_PREFIX + BODY[:-1] + "\u00e9",  # a letter, but not an ASCII one
    ],
)
def test_tokens_that_are_not_keys(token: str) -> None:
    assert not looks_like_key(token)


@pytest.mark.parametrize(
    "value", ["ak-" + "a" * 19, "ak-" + "a" * 21, "ak-" + "a" * 19 + "\u0663", "ak_" + "a" * 20]
)
def test_values_that_are_not_key_ids(value: str) -> None:
    assert not is_key_id(value)
    assert is_key_id("ak-" + "a" * 20)


def test_a_key_is_hashed_with_hmac_sha256_under_the_current_api_key_hash_key() -> None:
    keys = KeyRing(TEST_SECRET.encode())
    raw = new_raw_key()
    digest, derivation = hash_key(keys, raw)
    key = keys.current.key(Purpose.api_key_hash)
    assert digest == hmac.new(key, raw.encode(), hashlib.sha256).digest()
    assert derivation == keys.current.derivation
