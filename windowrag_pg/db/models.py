"""SQLAlchemy 2 models of the windowrag schema at the head migration, for Alembic (autogenerate
diffs) and for users who query the tables from SQLAlchemy. The library itself talks to Postgres
through psycopg and the SQL in sql/*.sql; the DDL of record is the migrations
(migrations/versions/, from 0001_schema.sql on). tests/test_models.py checks that autogenerate
finds nothing between these models and a database migrated to head: a migration that changes
a table changes its model too, comments included (sql/comments.sql writes them; psql shows
them). Not modelled: functions, row-level security, triggers, check constraints (Alembic does
not compare them) and each collection's own vector index (store/collections.py
builds it at run time; ``include_name`` keeps autogenerate from proposing to drop it).
"""
from __future__ import annotations

from datetime import datetime

from pgvector.sqlalchemy import HALFVEC
from sqlalchemy import (
    BigInteger, Boolean, DateTime, ForeignKey, Index, Integer, REAL, SmallInteger, String, Text, UniqueConstraint,
    literal_column, text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REGCONFIG, TSVECTOR
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from ..store.collections import COLLECTION_INDEX_PREFIX

SCHEMA = "windowrag"


def include_name(name: str | None, type_: str, parent_names: dict) -> bool:
    """Alembic's filter for autogenerate: the windowrag schema, without Alembic's own version
    table and the per-collection vector indexes, which no migration creates."""
    if type_ == "schema":
        return name == SCHEMA
    if type_ == "table":
        return name != "alembic_version"
    if type_ == "index":
        return not (name or "").startswith(COLLECTION_INDEX_PREFIX)
    return True


class Base(DeclarativeBase):
    pass


class Collection(Base):
    __tablename__ = "collections"
    __table_args__ = (Index("collections_tenant", "tenant"), {"schema": SCHEMA, "comment": (
        "One row per collection: its embedding model and dimension, text search configuration, unit "
        "(sentence or chunk), vector index kind and tenant.")})
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(Text, unique=True)
    embedding_model: Mapped[str] = mapped_column(Text)
    dimension: Mapped[int] = mapped_column(Integer)
    contextual_headers: Mapped[bool] = mapped_column(Boolean, default=False)
    ts_config: Mapped[str] = mapped_column(REGCONFIG)
    unit: Mapped[str] = mapped_column(Text, default="sentence")
    chunk_tokens: Mapped[int | None] = mapped_column(Integer)
    vector_index: Mapped[str] = mapped_column(Text, default="halfvec")  # 'halfvec' or 'binary' (0012)
    # the mean its halfvec index is centred on (0022); NULL: not centred
    vector_centre = mapped_column(HALFVEC(), nullable=True)
    # a binary index's outer threshold offsets around the centre (0023); NULL: one bit a dimension
    vector_spread = mapped_column(HALFVEC(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # who may see the collection (0003, docs/tenancy.md): row-level security reads it
    tenant: Mapped[str] = mapped_column(Text, server_default=text("'default'"))


class TenantRole(Base):
    """The database roles of each tenant (0003): current_tenants() reads it."""
    __tablename__ = "tenant_roles"
    __table_args__ = (Index("tenant_roles_role", "role_name"), {"schema": SCHEMA, "comment": (
        "Which database roles belong to which tenant (docs/tenancy.md).")})
    tenant: Mapped[str] = mapped_column(Text, primary_key=True)
    role_name: Mapped[str] = mapped_column(String, primary_key=True)  # PostgreSQL type name


class Document(Base):
    __tablename__ = "documents"
    __table_args__ = (
        UniqueConstraint("collection_id", "external_id"),
        Index("documents_metadata_gin", "metadata", postgresql_using="gin", postgresql_ops={"metadata": "jsonb_path_ops"}),
        {"schema": SCHEMA, "comment": (
            "The documents of each collection with their whole text: every offset in sections and "
            "sentences is into documents.text.")},
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey(f"{SCHEMA}.collections.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(Text)
    format: Mapped[str] = mapped_column(Text)
    metadata_: Mapped[dict] = mapped_column("metadata", JSONB)
    content_hash: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    sentence_count: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Section(Base):
    __tablename__ = "sections"
    __table_args__ = (UniqueConstraint("document_id", "ordinal"), {"schema": SCHEMA, "comment": (
        "The sections of each document (heading path, level, character range): windows are clamped at "
        "their section (unless clamp => 'document').")})
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey(f"{SCHEMA}.documents.id", ondelete="CASCADE"))
    ordinal: Mapped[int] = mapped_column(Integer)
    heading_path: Mapped[list[str]] = mapped_column(ARRAY(Text))
    level: Mapped[int] = mapped_column(SmallInteger)
    start_char: Mapped[int] = mapped_column(Integer)
    end_char: Mapped[int] = mapped_column(Integer)
    first_sentence: Mapped[int | None] = mapped_column(Integer)
    last_sentence: Mapped[int | None] = mapped_column(Integer)
    collection_id: Mapped[int] = mapped_column(Integer)  # set from the document by a trigger (0003)


class Sentence(Base):
    __tablename__ = "sentences"
    __table_args__ = (
        Index("sentences_document_ordinal", "document_id", "ordinal", unique=True),
        Index("sentences_section_ordinal", "section_id", "ordinal"),
        Index("sentences_tsv_gin", "tsv", postgresql_using="gin"),
        Index("sentences_collection", "collection_id"),
        {"schema": SCHEMA, "comment": (
            "One row per sentence (or chunk): its text, offsets, embedding (halfvec) and tsvector; "
            "the HNSW index of each collection is a partial index on this table.")},
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    collection_id: Mapped[int] = mapped_column(Integer)
    document_id: Mapped[int] = mapped_column(ForeignKey(f"{SCHEMA}.documents.id", ondelete="CASCADE"))
    section_id: Mapped[int] = mapped_column(ForeignKey(f"{SCHEMA}.sections.id", ondelete="CASCADE"))
    ordinal: Mapped[int] = mapped_column(Integer, comment=(
        "Position of the sentence in its document, from 0; windows are ranges of ordinals."))
    start_char: Mapped[int] = mapped_column(Integer, comment=(
        "0-based offset into documents.text, end_char exclusive: substr(d.text, start_char + 1, "
        "end_char - start_char) = text."))
    end_char: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    # the document's characters from this sentence's end to the next one's start (0014); NULL:
    # not stored (written before 0014), windows then read the document's text
    gap: Mapped[str | None] = mapped_column(Text)
    token_count: Mapped[int] = mapped_column(Integer)
    page: Mapped[int | None] = mapped_column(Integer)
    # halfvec of the collection's dimension (migration 0010); no fixed dimension in the column,
    # each collection's HNSW index is on embedding::halfvec(dim)
    embedding = mapped_column(HALFVEC(), nullable=False)
    tsv = mapped_column(TSVECTOR, nullable=False)
    bm25_length: Mapped[int] = mapped_column(Integer)


class Bm25Stats(Base):
    __tablename__ = "bm25_stats"
    __table_args__ = {"schema": SCHEMA, "comment": (
        "Per collection: sentence count and total length (the BM25 average length), and the postings "
        "packed, pending and stale.")}
    collection_id: Mapped[int] = mapped_column(ForeignKey(f"{SCHEMA}.collections.id", ondelete="CASCADE"), primary_key=True)
    n_sentences: Mapped[int] = mapped_column(BigInteger)
    total_length: Mapped[int] = mapped_column(BigInteger)
    packed_postings: Mapped[int] = mapped_column(BigInteger, default=0)  # in bm25_blocks (0011)
    pending_postings: Mapped[int] = mapped_column(BigInteger, default=0)  # rows of bm25_postings
    stale_postings: Mapped[int] = mapped_column(BigInteger, default=0)  # packed, of deleted sentences
    recent_postings: Mapped[int] = mapped_column(BigInteger, default=0)  # of packed, in the recent tier (0021)
    packed_through: Mapped[int | None] = mapped_column(BigInteger)  # the last sentence id of the last full pack


class Bm25Term(Base):
    __tablename__ = "bm25_terms"
    __table_args__ = {"schema": SCHEMA, "comment": (
        "Per collection and lexeme: its document frequency (df) and how many of those postings are "
        "packed in bm25_blocks (packed_df; recent_df of them in the recent tier).")}
    collection_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    lexeme: Mapped[str] = mapped_column(Text, primary_key=True)
    df: Mapped[int] = mapped_column(Integer)
    # of df, the postings packed in bm25_blocks (of live sentences); the rest are rows (0020)
    packed_df: Mapped[int] = mapped_column(Integer, default=0)
    recent_df: Mapped[int] = mapped_column(Integer, default=0)  # of packed_df, in the recent tier (0021)


class Bm25Posting(Base):
    __tablename__ = "bm25_postings"
    __table_args__ = (
        Index("bm25_postings_impact", "collection_id", "lexeme", literal_column("impact").desc(),
              postgresql_include=["sentence_id", "tf", "doc_length"]),
        {"schema": SCHEMA, "comment": (
            "BM25 postings written since the last pack, a row each; bm25_pack_recent moves them into "
            "bm25_blocks.")},
    )
    collection_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    lexeme: Mapped[str] = mapped_column(Text, primary_key=True)
    sentence_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    tf: Mapped[int] = mapped_column(Integer)
    doc_length: Mapped[int] = mapped_column(Integer)
    impact: Mapped[float] = mapped_column(REAL)


class Bm25Block(Base):
    """A term's postings packed 128 to a row in impact order (migration 0011), each its sentence id,
    tf and sentence length (migration 0013: the exact BM25 weight at any average length)."""
    __tablename__ = "bm25_blocks"
    __table_args__ = {"schema": SCHEMA, "comment": (
        "BM25 postings packed 128 to a row per lexeme in impact order (sentence ids, tfs, lengths), "
        "each block with its largest impact.")}
    collection_id: Mapped[int] = mapped_column(ForeignKey(f"{SCHEMA}.collections.id", ondelete="CASCADE"),
                                               primary_key=True)
    lexeme: Mapped[str] = mapped_column(Text, primary_key=True)
    block: Mapped[int] = mapped_column(Integer, primary_key=True)
    max_impact: Mapped[float] = mapped_column(REAL)
    sentence_ids = mapped_column(ARRAY(BigInteger), nullable=False)
    tfs = mapped_column(ARRAY(SmallInteger), nullable=False)
    lengths = mapped_column(ARRAY(Integer), nullable=False)
