"""Accounts and postings."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal


@dataclass
class Account:
    name: str
    balance: Decimal = Decimal("0")


@dataclass
class Book:
    accounts: dict[str, Account] = field(default_factory=dict)

    def account(self, name: str) -> Account:
        if name not in self.accounts:
            self.accounts[name] = Account(name)
        return self.accounts[name]

    def post(self, debit: str, credit: str, amount: Decimal) -> None:
        """Move `amount` from the credit account to the debit account."""
        if amount <= 0:
            raise ValueError(f"a posting moves a positive amount, not {amount}")
        self.account(debit).balance += amount
        self.account(credit).balance -= amount

    def trial_balance(self) -> Decimal:
        """The sum of every balance: zero in a consistent book."""
        return sum((a.balance for a in self.accounts.values()), Decimal("0"))
