//! Raw HTML inside Markdown, reduced to what the document model (and so EPUB) allows.
