"""The encryption decorator: AES-256-GCM per blob, several keys for rotation.

Stored layout of one blob (40 bytes more than the plaintext)::

    b"OXE"  version (1 byte)  key fingerprint (8 bytes)  nonce (12 bytes)  ciphertext + tag (16)

The header (magic, version, fingerprint, nonce) and the blob's key are the GCM associated data,
so a blob cannot be moved to another key or have its header edited without failing
authentication. The first configured key encrypts; every configured key decrypts (a blob names
the key it needs by fingerprint). A blob whose key is not configured, or that fails
authentication, raises ``EncryptionKeyError`` / ``BlobIntegrityError`` — never garbage bytes.
A plaintext blob written before encryption was switched on is still accepted, but only when its
BLAKE3 equals its key (it is then, provably, the right content).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import blake3

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from oxidav.blobs.store import (
    READ_BLOCK,
    BlobIntegrityError,
    BlobStore,
    check_range,
)

MAGIC = b"OXE"
VERSION = 1
_HEADER = struct.Struct(">3sB8s12s")
HEADER_SIZE = _HEADER.size
TAG_SIZE = 16
OVERHEAD = HEADER_SIZE + TAG_SIZE


class EncryptionKeyError(BlobIntegrityError):
    """A blob was encrypted with a key that is not configured."""


def key_fingerprint(key: bytes) -> bytes:
    """8 bytes that identify ``key`` without revealing it."""
    return blake3.blake3(b"oxidav blob key fingerprint v1\0" + key).digest()[:8]


class EncryptedBlobStore:
    """Wraps ``inner``, encrypting on the way in and decrypting on the way out."""

    def __init__(self, inner: BlobStore, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("EncryptedBlobStore needs at least one key")
        for key in keys:
            if len(key) != 32:
                raise ValueError("AES-256 keys are 32 bytes")
        # Imported here: ``cryptography`` adds ~7 MB to every process that imports the blob
        # package, and only stores with encryption keys need it.
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.inner = inner
        self._write_key: AESGCM = AESGCM(keys[0])
        self._write_fingerprint = key_fingerprint(keys[0])
        self._read_keys = {key_fingerprint(key): AESGCM(key) for key in keys}

    def __repr__(self) -> str:
        return f"EncryptedBlobStore({self.inner!r}, keys={len(self._read_keys)})"

    @property
    def concurrency(self) -> int:
        return self.inner.concurrency

    def encrypt(self, key: str, data: bytes) -> bytes:
        header = _HEADER.pack(MAGIC, VERSION, self._write_fingerprint, os.urandom(12))
        return header + self._write_key.encrypt(header[-12:], data, header + key.encode())

    def decrypt(self, key: str, stored: bytes) -> bytes:
        try:
            return self._decrypt(key, stored)
        except BlobIntegrityError:
            if blake3.blake3(stored).hexdigest() == key:
                return stored  # plaintext from before encryption was switched on
            raise

    def _decrypt(self, key: str, stored: bytes) -> bytes:
        if len(stored) < OVERHEAD or stored[:3] != MAGIC:
            raise BlobIntegrityError(f"blob {key} is not an oxidav-encrypted blob, or is corrupt")
        _magic, version, fingerprint, nonce = _HEADER.unpack_from(stored)
        if version != VERSION:
            raise BlobIntegrityError(f"blob {key} has unknown encryption format {version}")
        cipher = self._read_keys.get(fingerprint)
        if cipher is None:
            raise EncryptionKeyError(
                f"blob {key} is encrypted with key {fingerprint.hex()}, which is not among the "
                f"configured encryption_keys ({', '.join(f.hex() for f in self._read_keys)})"
            )
        from cryptography.exceptions import InvalidTag

        try:
            return cipher.decrypt(nonce, stored[HEADER_SIZE:], stored[:HEADER_SIZE] + key.encode())
        except InvalidTag:
            raise BlobIntegrityError(
                f"blob {key} failed authentication with key {fingerprint.hex()}: it is corrupt"
            ) from None

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(key, self.encrypt(key, data))

    def put_unsynced(self, key: str, data: bytes) -> None:
        self.inner.put_unsynced(key, self.encrypt(key, data))

    def sync(self, keys: Sequence[str]) -> None:
        self.inner.sync(keys)

    def get(self, key: str) -> bytes:
        return self.decrypt(key, self.inner.get(key))

    def get_range(self, key: str, start: int, end: int, block: int = READ_BLOCK) -> Iterator[bytes]:
        # GCM authenticates the whole blob, so the whole blob is read and checked first.
        check_range(start, end)
        view = memoryview(self.get(key))[start:end]
        return (bytes(view[i : i + block]) for i in range(0, len(view), block))

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def size(self, key: str) -> int:
        stored = self.inner.size(key)
        if stored < OVERHEAD:
            return stored  # only a legacy plaintext blob can be this small
        head = b"".join(self.inner.get_range(key, 0, len(MAGIC)))
        return stored - OVERHEAD if head == MAGIC else stored

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def iter_keys(self) -> Iterator[str]:
        return self.inner.iter_keys()

    def health_check(self) -> None:
        self.inner.health_check()

    def close(self) -> None:
        self.inner.close()


__all__ = ["OVERHEAD", "EncryptedBlobStore", "EncryptionKeyError", "key_fingerprint"]
