from stratamem.core.plugins import get_plugin_manager


def test_adapter_is_found_through_the_stratamem_entry_point_group() -> None:
    names = {name for name, _ in get_plugin_manager().list_name_plugin()}
    assert "dsh" in names
