from stratamem.core.cli import main


def test_help_lists_builtin_commands_registered_through_the_plugin_hook(capsys) -> None:
    try:
        main(["--help"])
    except SystemExit as e:
        assert e.code == 0
    assert "serve" in capsys.readouterr().out
