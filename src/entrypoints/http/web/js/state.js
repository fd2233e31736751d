// The page's state, shared by its modules.
export const state = {
  conversations: [], cursor: null, query: "",
  current: null, detail: null, messages: [], trace: [], pendingTitle: null, editing: null, approvals: [], approvalNotice: null,
  source: null, streaming: false, chosen: false, error: null, offline: false,
  sidebarOpen: false, traceOpen: false, renaming: null, deleting: {}, auth: { required: false, authenticated: true },
};

export const currentSummary = () => state.conversations.find((c) => c.id === state.current) || (state.detail && state.detail.conversation) || null;
