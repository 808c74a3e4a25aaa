"""Invoices for the consulting side of the business."""
