"""scripts/image_pip_config.py: the host's pip settings passed to the image's build stage are the
network ones that work inside it (remote URLs, hosts, proxy, timeouts), with the host's CA bundle,
and nothing that names a path of the host."""

from __future__ import annotations

from pathlib import Path

from scripts.image_pip_config import BUILD_DIR, parse_config_list, write

# what `pip config list` prints on a host with a mirror, a local wheel folder and a constraint file
LISTED = """\
:env:.cert='{bundle}'
:env:.default-timeout='180'
:env:.index-url='https://mirror.example/simple'
global.cert='/nowhere/ca.pem'
global.constraint='/etc/pip/constraints.txt'
global.extra-index-url='file:///srv/pypi/simple https://extra.example/simple'
global.find-links='/srv/wheels'
global.index-url='https://ignored.example/simple'
install.trusted-host='mirror.example'
freeze.exclude='pip'
"""


def read_conf(folder: Path) -> dict[str, str]:
    lines = (folder / "pip.conf").read_text().splitlines()
    assert lines[0] == "[global]"
    return dict(line.split(" = ", 1) for line in lines[1:])


def test_the_network_settings_pass_with_the_hosts_bundle_and_no_host_path(tmp_path: Path) -> None:
    bundle = tmp_path / "host-ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nhost CA\n-----END CERTIFICATE-----\n")
    out = tmp_path / "context"
    notes = list(write(out, LISTED.format(bundle=bundle), env={}))
    assert read_conf(out) == {
        "default-timeout": "180",
        "index-url": "https://mirror.example/simple",  # PIP_INDEX_URL wins over the files
        "extra-index-url": "https://extra.example/simple",
        "trusted-host": "mirror.example",
        "cert": f"{BUILD_DIR}/ca.crt",
    }
    assert (out / "ca.crt").read_text() == bundle.read_text()
    assert notes[-1].startswith("left out: ")
    left_out = set(notes[-1].removeprefix("left out: ").split("; "))
    assert left_out == {
        "find-links=/srv/wheels (a path on this machine)",
        "extra-index-url=file:///srv/pypi/simple (a path on this machine)",
        "constraint (not a network setting)",
    }
    assert "/srv" not in (out / "pip.conf").read_text()


def test_without_settings_pip_keeps_its_defaults_and_a_stale_bundle_is_removed(tmp_path: Path) -> None:
    out = tmp_path / "context"
    out.mkdir()
    (out / "ca.crt").write_text("from an earlier build")
    notes = list(write(out, "", env={"SSL_CERT_FILE": str(tmp_path / "missing.pem")}, system_bundle=None))
    assert (out / "pip.conf").read_text() == "[global]\n"
    assert not (out / "ca.crt").exists()
    assert notes[:2] == ["pip settings for the build: none (pip defaults)", "CA bundle: pip's own"]


def test_the_bundle_falls_back_to_ssl_cert_file(tmp_path: Path) -> None:
    bundle = tmp_path / "env-ca.pem"
    bundle.write_text("env CA")
    out = tmp_path / "context"
    write(out, "", env={"SSL_CERT_FILE": str(bundle)}, system_bundle=None)
    assert (out / "ca.crt").read_text() == "env CA"
    assert read_conf(out) == {"cert": f"{BUILD_DIR}/ca.crt"}


def test_section_precedence_is_pips() -> None:
    listed = "global.timeout='10'\ninstall.timeout='20'\n:env:.retries='3'\nglobal.retries='9'\n"
    assert parse_config_list(listed) == {"timeout": "20", "retries": "3"}
