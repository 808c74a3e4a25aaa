"""Importing the bank's statement export (one CSV line per transfer)."""

from __future__ import annotations

import csv
from decimal import Decimal, InvalidOperation
from pathlib import Path

from ledger.book import Book

BANK = "assets:bank"


def import_statement(book: Book, path: Path, *, default_account: str = "expenses:unsorted") -> int:
    """Post every transfer of the statement; return how many were posted.

    Columns: date, counterparty, amount (negative: money leaving the bank), account
    (optional: where to book it; empty means `default_account`).
    """
    posted = 0
    with path.open(newline="", encoding="utf-8") as fh:
        for line_no, (day, counterparty, amount_text, account) in enumerate(csv.reader(fh), start=1):
            try:
                amount = Decimal(amount_text)
            except InvalidOperation:
                raise ValueError(f"{path.name}:{line_no}: bad amount {amount_text!r}") from None
            target = account or default_account
            if amount < 0:
                book.post(target, BANK, -amount)
            elif amount > 0:
                book.post(BANK, target, amount)
            posted += 1
    return posted
