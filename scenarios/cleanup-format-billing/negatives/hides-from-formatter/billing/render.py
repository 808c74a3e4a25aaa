"""Plain-text invoices for e-mail."""
from __future__ import annotations
from billing.invoice import Invoice

def render_text(inv:Invoice,*,currency:str='EUR',width:int=60)->str:
    """The invoice as fixed-width text."""
    rows=[f"Invoice {inv.number} for {inv.client}",f"Issued {inv.issued.isoformat()}, due {inv.due.isoformat()}",'-'*width]
    for line in inv.lines: rows.append(f"{line.description[:width-20]:<{width-20}}{line.net:>14} {currency}")
    totals=inv.totals()
    rows+=['-'*width,*(f"{name.upper():<{width-20}}{value:>14} {currency}" for name,value in totals.items())]
    return '\n'.join(rows)+'\n'
