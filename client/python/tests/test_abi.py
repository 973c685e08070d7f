"""The ctypes mirror of libinferd (inferd/_lib.py) against the C compiler's view of include/inferd.h."""

import ctypes
import os
import subprocess

import pytest

from inferd import _lib


@pytest.fixture(scope="module")
def facts():
    probe = os.environ.get("INFERD_ABI_PROBE")
    if not probe:
        pytest.skip("INFERD_ABI_PROBE is not set: run through tests/integration/test_python_client.sh")
    sizes, offsets, consts = {}, {}, {}
    for line in subprocess.run([probe], check=True, capture_output=True, text=True).stdout.splitlines():
        kind, *rest = line.split()
        if kind == "size":
            sizes[rest[0]] = int(rest[1])
        elif kind == "offset":
            offsets[(rest[0], rest[1])] = int(rest[2])
        elif kind == "const":
            consts[rest[0]] = int(rest[1])
    return sizes, offsets, consts


def test_every_struct_matches(facts):
    sizes, offsets, _ = facts
    assert set(sizes) == set(_lib.ABI_STRUCTS), "structs mirrored in Python differ from the probe's"
    for cname, cls in _lib.ABI_STRUCTS.items():
        assert ctypes.sizeof(cls) == sizes[cname], "sizeof(struct %s)" % cname
        c_fields = sorted(f for (s, f) in offsets if s == cname)
        assert sorted(f[0] for f in cls._fields_) == c_fields, "fields of struct %s" % cname
        for field, *_ in cls._fields_:
            assert getattr(cls, field).offset == offsets[(cname, field)], "offsetof(%s, %s)" % (cname, field)


def test_error_codes_and_version_match(facts):
    _, _, consts = facts
    codes = {name: value for name, value in consts.items() if name.startswith("INFERD_E")}
    assert codes == {name: code for code, name in _lib.ERROR_NAMES.items()}
    assert consts["INFERD_OK"] == 0
    assert (consts["INFERD_VERSION_MAJOR"], consts["INFERD_VERSION_MINOR"]) == (_lib.LIB_MAJOR, _lib.LIB_MINOR)
    assert _lib.load().inferd_version().decode() == "%d.%d" % (_lib.LIB_MAJOR, _lib.LIB_MINOR)


def test_library_found_through_pkg_config(monkeypatch, tmp_path):
    # A make install to another prefix: its inferd.pc names the libdir; nothing else points there.
    libdir = tmp_path / "prefix" / "lib"
    (libdir / "pkgconfig").mkdir(parents=True)
    (libdir / "pkgconfig" / "inferd.pc").write_text(
        "libdir=%s\nName: inferd\nDescription: test\nVersion: 0.2\nLibs: -L${libdir} -linferd\n" % libdir)
    monkeypatch.delenv("INFERD_LIB", raising=False)
    monkeypatch.setenv("PKG_CONFIG_PATH", str(libdir / "pkgconfig"))
    if _lib.shutil.which("pkg-config") is None:
        pytest.skip("no pkg-config")
    assert str(libdir / "libinferd.so.0") in _lib._candidates()


def test_missing_library_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(_lib, "_lib", None)
    monkeypatch.setenv("INFERD_LIB", str(tmp_path / "libinferd.so.0"))
    with pytest.raises(_lib.LibraryNotFound, match="set INFERD_LIB"):
        _lib.load()
