-- House styles: a style file an admin or a tenant uploaded, with the fonts and ornament images
-- it names. `tenant` is the tenant whose books may use it, or '' for every tenant (an
-- admin's). `files` is the JSON of the files' names, kinds and SHA-256s; their bytes are
-- blobs under `styles/` by content. Expand only: the previous release neither reads nor
-- writes it.
CREATE TABLE house_styles (
    tenant     TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    title      TEXT    NOT NULL,
    source     TEXT    NOT NULL,
    files      TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL,
    PRIMARY KEY (tenant, name)
);
