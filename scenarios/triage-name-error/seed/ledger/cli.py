"""`python -m ledger.cli BOOK.json import STATEMENT.csv` and `... balance`."""

from __future__ import annotations

import argparse
import json
from decimal import Decimal
from pathlib import Path

from ledger.book import Account, Book
from ledger.importer import import_statement


def load(path: Path) -> Book:
    if not path.exists():
        return Book()
    data = json.loads(path.read_text(encoding="utf-8"))
    return Book({name: Account(name, Decimal(value)) for name, value in data.items()})


def save(book: Book, path: Path) -> None:
    data = {name: str(acc.balance) for name, acc in sorted(book.accounts.items())}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ledger")
    parser.add_argument("book", type=Path)
    sub = parser.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import")
    imp.add_argument("statement", type=Path)
    sub.add_parser("balance")
    args = parser.parse_args(argv)
    book = load(args.book)
    if args.command == "import":
        count = import_statement(book, args.statement)
        save(book, args.book)
        print(f"posted {count} transfers")
    else:
        for name, acc in sorted(book.accounts.items()):
            print(f"{name:30} {acc.balance:>12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
