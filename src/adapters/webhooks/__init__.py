"""Webhook calls over HTTP (httpx) and the system resolver."""
