"""Stock keeping for the shop's back office."""

from inventory.models import Item, StockLevel
from inventory.parsing import parse_csv_row
from inventory import packs
