from decimal import Decimal

from ledger.book import Book


def test_postings_keep_the_book_balanced() -> None:
    book = Book()
    book.post("expenses:rent", "assets:bank", Decimal("700"))
    book.post("assets:bank", "income:salary", Decimal("2500"))
    assert book.account("assets:bank").balance == Decimal("1800")
    assert book.trial_balance() == 0
