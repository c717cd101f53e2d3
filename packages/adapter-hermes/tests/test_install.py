import subprocess
import sys
from pathlib import Path

import pytest

from stratamem.contract.errors import StratamemError
from stratamem.hermes import install as inst

pytest.importorskip(
    "agent.memory_provider", reason="needs the real hermes-agent (tox -e py311-hermes)"
)

CONFIG = """# my hermes config
model:
  provider: custom   # keep me
  default: fake-model
memory:
  # the external provider
  memory_enabled: true
"""


def _install(hh: Path) -> inst.InstallReport:
    return inst.install(hh, python=sys.executable)


def test_install_writes_a_plugin_folder_hermes_recognises_and_selects_it(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(CONFIG)
    report = _install(hermes_home)
    init = (hermes_home / "plugins" / "stratamem" / "__init__.py").read_bytes()
    assert b"MemoryProvider" in init[:8192]
    assert (hermes_home / "plugins" / "stratamem" / "plugin.yaml").exists()
    text = (hermes_home / "config.yaml").read_text()
    assert "provider: stratamem" in text
    for comment in ("# my hermes config", "# keep me", "# the external provider"):
        assert comment in text
    assert "memory_enabled: true" in text
    assert len(report.changed) == 3

    from plugins.memory import _get_active_memory_provider, find_provider_dir

    assert _get_active_memory_provider() == "stratamem"
    assert find_provider_dir("stratamem") == hermes_home / "plugins" / "stratamem"


def test_a_second_install_changes_nothing(hermes_home: Path) -> None:
    _install(hermes_home)
    before = (hermes_home / "config.yaml").read_text()
    again = _install(hermes_home)
    assert again.changed == []
    assert (hermes_home / "config.yaml").read_text() == before


def test_install_creates_a_missing_config(hermes_home: Path) -> None:
    _install(hermes_home)
    assert "provider: stratamem" in (hermes_home / "config.yaml").read_text()


def test_uninstall_reverses_install_and_keeps_the_rest_of_the_config(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(CONFIG)
    _install(hermes_home)
    inst.uninstall(hermes_home)
    text = (hermes_home / "config.yaml").read_text()
    assert "stratamem" not in text
    assert "# keep me" in text and "memory_enabled: true" in text
    assert not (hermes_home / "plugins" / "stratamem").exists()
    assert inst.uninstall(hermes_home).changed == []


def test_uninstall_leaves_a_folder_it_did_not_write(hermes_home: Path) -> None:
    foreign = hermes_home / "plugins" / "stratamem"
    foreign.mkdir(parents=True)
    (foreign / "__init__.py").write_text("# someone else's plugin\n")
    with pytest.raises(StratamemError) as err:
        inst.uninstall(hermes_home)
    assert err.value.code == "conflict"
    assert (foreign / "__init__.py").exists()


def test_install_refuses_a_config_that_is_not_a_mapping_and_writes_nothing(
    hermes_home: Path,
) -> None:
    (hermes_home / "config.yaml").write_text("- just\n- a list\n")
    with pytest.raises(StratamemError) as err:
        _install(hermes_home)
    assert err.value.code == "config_invalid"
    assert not (hermes_home / "plugins").exists()
    assert (hermes_home / "config.yaml").read_text() == "- just\n- a list\n"


def test_install_refuses_an_interpreter_that_cannot_import_the_provider(
    hermes_home: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    with pytest.raises(StratamemError) as err:
        inst.install(hermes_home, python=str(bare / "bin" / "python"))
    assert err.value.code == "config_invalid"
    assert not (hermes_home / "plugins").exists()
    assert not (hermes_home / "config.yaml").exists()


def test_the_stratamem_cli_installs_and_uninstalls(hermes_home: Path) -> None:
    from stratamem.core.cli import main

    assert (
        main(["hermes", "install", "--hermes-home", str(hermes_home), "--python", sys.executable])
        == 0
    )
    assert (hermes_home / "plugins" / "stratamem" / "__init__.py").exists()
    assert main(["hermes", "uninstall", "--hermes-home", str(hermes_home)]) == 0
    assert not (hermes_home / "plugins" / "stratamem").exists()


def test_hermes_own_discovery_loads_the_installed_provider(hermes_home: Path) -> None:
    _install(hermes_home)
    from agent.memory_provider import MemoryProvider
    from plugins.memory import discover_memory_providers, load_memory_provider

    names = [name for name, _desc, _available in discover_memory_providers()]
    assert "stratamem" in names
    provider = load_memory_provider("stratamem")
    assert isinstance(provider, MemoryProvider)
    assert provider.name == "stratamem"
    assert type(provider).__module__ == "stratamem.hermes.provider"
    assert provider.is_available()


def test_install_keeps_hermes_config_private(hermes_home: Path) -> None:
    """Hermes keeps config.yaml 0600 (API keys); install created it 0644 under a 022 umask. Run
    through the real entry point, with an existing 0600 file and with none."""
    exe = str(Path(sys.executable).with_name("stratamem"))
    conf = hermes_home / "config.yaml"
    for existing in (False, True):
        if existing:
            conf.write_text(CONFIG + "  api_key: sk-secret\n")
            conf.chmod(0o600)
        elif conf.exists():
            conf.unlink()
        done = subprocess.run(
            [
                exe,
                "hermes",
                "install",
                "--hermes-home",
                str(hermes_home),
                "--python",
                sys.executable,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            umask=0o022,
        )
        assert done.returncode == 0, done.stderr
        assert conf.stat().st_mode & 0o777 == 0o600, (existing, oct(conf.stat().st_mode))
        assert "provider: stratamem" in conf.read_text()
