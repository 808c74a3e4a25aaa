from decimal import Decimal

import pytest

from inventory.models import Item, StockLevel
from inventory.parsing import parse_csv_row
from inventory.report import restock_list, value_by_tag
from inventory.units import to_pieces


def test_parse_row_converts_packs() -> None:
    level = parse_csv_row(["ABC-0001", "Pencil", "0.40", "2", "box", "office;school"])
    assert level.item == Item("ABC-0001", "Pencil", Decimal("0.40"), ("office", "school"))
    assert level.back_room == 24


def test_parse_row_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="bad SKU"):
        parse_csv_row(["abc", "Pencil", "0.40", "1", "piece", ""])
    with pytest.raises(ValueError, match="bad price"):
        parse_csv_row(["ABC-0001", "Pencil", "cheap", "1", "piece", ""])


def test_plugin_units_are_registered_on_package_import() -> None:
    import inventory  # noqa: F401  (importing the package registers the pack sizes)

    assert to_pieces(1, "crate") == 144


def test_report() -> None:
    pen = StockLevel(Item("PEN-0001", "Pen", Decimal("1.00"), ("office",)), shelf=1, back_room=10)
    cup = StockLevel(Item("CUP-0001", "Cup", Decimal("3.00")), shelf=9)
    assert value_by_tag([pen, cup]) == {"office": Decimal("11.00"), "untagged": Decimal("27.00")}
    assert restock_list([cup, pen]) == ["PEN-0001"]
