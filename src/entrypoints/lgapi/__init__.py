"""LangGraph's Agent Server API over Sophos's services (issue 29): a second Starlette app,
served by `sophos serve` on LANGGRAPH_API_PORT, so the official SDKs and Agent Chat UI
drive Sophos's durable runs. Threads are conversations, runs are runs, interrupts are
approvals; nothing here executes anything the services do not."""
