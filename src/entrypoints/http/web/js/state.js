// The page's state, shared by its modules.
export const state = {
  conversations: [], cursor: null, query: "",
  current: null, detail: null, messages: [], trace: [], pendingTitle: null, editing: null, approvals: [], approvalNotice: null, queued: [],
  source: null, streaming: false, chosen: false, liveModel: null, error: null, offline: false,
  sidebarOpen: false, traceOpen: false, renaming: null, deleting: {}, auth: { required: false, authenticated: true },
  pinned: [], archiveView: false, temporary: false, temporaryId: null,  // js/organise.js
};

export const currentSummary = () => state.conversations.find((c) => c.id === state.current) || (state.detail && state.detail.conversation) || null;
