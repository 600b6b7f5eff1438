/*
 * windowrag_native: BM25 phase 1 (weigh and sum a query's postings) in C.
 *
 * windowrag.bm25_search reads each query term's packed postings (windowrag.bm25_blocks: 128
 * sentence ids with their tf and length a row). In SQL every posting becomes an executor row
 * (unnest, weigh, hash-aggregate: ~0.7 us a posting, nearly all of the BM25 leg's time). This
 * aggregate takes whole blocks instead: it weighs each posting with the formula of
 * windowrag.bm25_term_weight, sums per sentence in a hash table, and returns the best `keep`
 * sums (sum descending, sentence id ascending) as two parallel arrays. bm25_score gives one
 * sentence's exact score from its tsvector (phase 2, for the candidates of cut lists), where SQL
 * unnests the tsvector and joins it to the query terms. Pure computation: the SQL statement
 * decides which rows to read; nothing here knows the schema.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "tsearch/ts_type.h"
#include "utils/array.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"				/* before 16 its macros are in postgres.h */
#endif

PG_MODULE_MAGIC;

#define EMPTY_KEY PG_INT64_MIN

typedef struct SentenceSum
{
	int64		sentence_id;
	double		sum;
} SentenceSum;

typedef struct SumsState
{
	SentenceSum *slots;			/* open addressing, linear probing */
	uint64		mask;			/* capacity - 1 (capacity a power of two) */
	uint64		count;
	int32		keep;
} SumsState;

static inline uint64
hash_id(int64 id)
{
	/* splitmix64's finalizer: sentence ids are dense, so spread them */
	uint64		x = (uint64) id;

	x ^= x >> 30;
	x *= UINT64CONST(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64CONST(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

static void
init_slots(SumsState *state, uint64 capacity)
{
	state->slots = palloc_array(SentenceSum, capacity);
	for (uint64 i = 0; i < capacity; i++)
		state->slots[i].sentence_id = EMPTY_KEY;
	state->mask = capacity - 1;
	state->count = 0;
}

static inline void
add_to(SumsState *state, int64 id, double weight)
{
	uint64		i = hash_id(id) & state->mask;

	for (;;)
	{
		SentenceSum *slot = &state->slots[i];

		if (slot->sentence_id == id)
		{
			slot->sum += weight;
			return;
		}
		if (slot->sentence_id == EMPTY_KEY)
		{
			slot->sentence_id = id;
			slot->sum = weight;
			state->count++;
			return;
		}
		i = (i + 1) & state->mask;
	}
}

static void
grow(SumsState *state)
{
	SentenceSum *old = state->slots;
	uint64		old_capacity = state->mask + 1;

	init_slots(state, old_capacity * 2);
	for (uint64 i = 0; i < old_capacity; i++)
		if (old[i].sentence_id != EMPTY_KEY)
			add_to(state, old[i].sentence_id, old[i].sum);
	pfree(old);
}

static void *
array_values(ArrayType *array, Oid element_type, const char *name, int *length)
{
	if (ARR_NDIM(array) > 1)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("windowrag_native.bm25_sums: %s must be one-dimensional", name)));
	if (ARR_HASNULL(array))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("windowrag_native.bm25_sums: %s holds a NULL", name)));
	if (ARR_ELEMTYPE(array) != element_type)
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("windowrag_native.bm25_sums: %s has the wrong element type", name)));
	*length = ARR_NDIM(array) == 0 ? 0 : ARR_DIMS(array)[0];
	return ARR_DATA_PTR(array);
}

/*
 * bm25_sums_step(state, sentence_ids bigint[], tfs smallint[], lengths integer[],
 *                idf float8, avg_length float8, k1 float8, b float8, keep integer)
 */
PG_FUNCTION_INFO_V1(bm25_sums_step);
Datum
bm25_sums_step(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	SumsState  *state;
	ArrayType  *ids_array,
			   *tfs_array,
			   *lengths_array;
	int64	   *ids;
	int16	   *tfs;
	int32	   *lengths;
	int			n_ids,
				n_tfs,
				n_lengths;
	double		idf,
				avg_length,
				k1,
				b;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "bm25_sums_step called in non-aggregate context");

	if (PG_ARGISNULL(0))
	{
		MemoryContext old = MemoryContextSwitchTo(aggcontext);

		state = palloc_object(SumsState);
		init_slots(state, 8192);	/* a query's postings at 100k: median ~4,000 */
		state->keep = PG_ARGISNULL(8) ? 0 : PG_GETARG_INT32(8);
		MemoryContextSwitchTo(old);
	}
	else
		state = (SumsState *) PG_GETARG_POINTER(0);

	/* a term without postings since the last pack arrives as NULL arrays */
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		PG_RETURN_POINTER(state);
	if (PG_ARGISNULL(4) || PG_ARGISNULL(5) || PG_ARGISNULL(6) || PG_ARGISNULL(7))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("windowrag_native.bm25_sums: idf, avg_length, k1 and b must not be NULL")));

	ids_array = PG_GETARG_ARRAYTYPE_P(1);
	tfs_array = PG_GETARG_ARRAYTYPE_P(2);
	lengths_array = PG_GETARG_ARRAYTYPE_P(3);
	ids = array_values(ids_array, INT8OID, "sentence_ids", &n_ids);
	tfs = array_values(tfs_array, INT2OID, "tfs", &n_tfs);
	lengths = array_values(lengths_array, INT4OID, "lengths", &n_lengths);
	if (n_ids != n_tfs || n_ids != n_lengths)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("windowrag_native.bm25_sums: sentence_ids, tfs and lengths differ in length (%d, %d, %d)",
							   n_ids, n_tfs, n_lengths)));

	idf = PG_GETARG_FLOAT8(4);
	avg_length = PG_GETARG_FLOAT8(5);
	k1 = PG_GETARG_FLOAT8(6);
	b = PG_GETARG_FLOAT8(7);

	for (int i = 0; i < n_ids; i++)
	{
		/* the expression of windowrag.bm25_term_weight, evaluated in the same order */
		double		tf = (double) tfs[i];
		double		weight = tf * (k1 + 1) / (tf + k1 * (1 - b + b * (double) lengths[i] / avg_length));

		if ((state->count + 1) * 2 > state->mask + 1)
		{
			MemoryContext old = MemoryContextSwitchTo(aggcontext);

			grow(state);
			MemoryContextSwitchTo(old);
		}
		add_to(state, ids[i], idf * weight);
	}
	PG_RETURN_POINTER(state);
}

/* "a ranks before b": sum descending, then sentence id ascending */
static inline bool
ranks_before(const SentenceSum *a, const SentenceSum *b)
{
	if (a->sum != b->sum)
		return a->sum > b->sum;
	return a->sentence_id < b->sentence_id;
}

static int
compare_rank(const void *a, const void *b)
{
	return ranks_before(a, b) ? -1 : (ranks_before(b, a) ? 1 : 0);
}

/* the heap's root is the entry that ranks last among those kept */
static void
sift_down(SentenceSum *heap, int size, int i)
{
	for (;;)
	{
		int			worst = i,
					left = 2 * i + 1,
					right = left + 1;
		SentenceSum tmp;

		if (left < size && ranks_before(&heap[worst], &heap[left]))
			worst = left;
		if (right < size && ranks_before(&heap[worst], &heap[right]))
			worst = right;
		if (worst == i)
			return;
		tmp = heap[i];
		heap[i] = heap[worst];
		heap[worst] = tmp;
		i = worst;
	}
}

PG_FUNCTION_INFO_V1(bm25_sums_final);
Datum
bm25_sums_final(PG_FUNCTION_ARGS)
{
	SumsState  *state = PG_ARGISNULL(0) ? NULL : (SumsState *) PG_GETARG_POINTER(0);
	TupleDesc	tupdesc;
	SentenceSum *kept;
	int			n_kept = 0,
				limit;
	Datum	   *id_datums,
			   *sum_datums;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "bm25_sums_final must return a composite type");
	tupdesc = BlessTupleDesc(tupdesc);

	if (state == NULL)
		limit = 0;
	else if (state->keep <= 0 || (uint64) state->keep > state->count)
		limit = (int) state->count;
	else
		limit = state->keep;

	kept = palloc_array(SentenceSum, Max(limit, 1));
	if (limit > 0)
	{
		/* keep the best `limit` in a heap whose root ranks last */
		for (uint64 i = 0; i <= state->mask; i++)
		{
			SentenceSum *slot = &state->slots[i];

			if (slot->sentence_id == EMPTY_KEY)
				continue;
			if (n_kept < limit)
			{
				int			j = n_kept++;

				kept[j] = *slot;
				/* sift up */
				while (j > 0 && ranks_before(&kept[(j - 1) / 2], &kept[j]))
				{
					SentenceSum tmp = kept[j];

					kept[j] = kept[(j - 1) / 2];
					kept[(j - 1) / 2] = tmp;
					j = (j - 1) / 2;
				}
			}
			else if (ranks_before(slot, &kept[0]))
			{
				kept[0] = *slot;
				sift_down(kept, n_kept, 0);
			}
		}
		qsort(kept, n_kept, sizeof(SentenceSum), compare_rank);
	}

	id_datums = palloc_array(Datum, Max(n_kept, 1));
	sum_datums = palloc_array(Datum, Max(n_kept, 1));
	for (int i = 0; i < n_kept; i++)
	{
		id_datums[i] = Int64GetDatum(kept[i].sentence_id);
		sum_datums[i] = Float8GetDatum(kept[i].sum);
	}
	/* construct_array, not construct_array_builtin, which took no float8 on PostgreSQL 15 (18 takes it) */
	values[0] = PointerGetDatum(construct_array(id_datums, n_kept, INT8OID, sizeof(int64),
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[1] = PointerGetDatum(construct_array(sum_datums, n_kept, FLOAT8OID, sizeof(float8),
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * bm25_score(tsv tsvector, lexemes text[], idfs float8[], length integer, avg_length float8,
 *            k1 float8, b float8): sum over the query lexemes found in tsv of
 * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length)), tf = the lexeme's number
 * of positions (what windowrag's SQL counts with cardinality(positions)). 0 when none is found.
 */
PG_FUNCTION_INFO_V1(bm25_score);
Datum
bm25_score(PG_FUNCTION_ARGS)
{
	TSVector	tsv = PG_GETARG_TSVECTOR(0);
	ArrayType  *lexemes = PG_GETARG_ARRAYTYPE_P(1);
	ArrayType  *idfs_array = PG_GETARG_ARRAYTYPE_P(2);
	double		length = (double) PG_GETARG_INT32(3);
	double		avg_length = PG_GETARG_FLOAT8(4);
	double		k1 = PG_GETARG_FLOAT8(5);
	double		b = PG_GETARG_FLOAT8(6);
	WordEntry  *entries = ARRPTR(tsv);
	char	   *strings = STRPTR(tsv);
	Datum	   *lexeme_datums;
	bool	   *lexeme_nulls;
	int			n_lexemes,
				n_idfs;
	double	   *idfs;
	double		score = 0;

	deconstruct_array(lexemes, TEXTOID, -1, false, TYPALIGN_INT, &lexeme_datums, &lexeme_nulls, &n_lexemes);
	idfs = array_values(idfs_array, FLOAT8OID, "idfs", &n_idfs);
	if (n_idfs != n_lexemes)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("windowrag_native.bm25_score: lexemes and idfs differ in length (%d, %d)",
							   n_lexemes, n_idfs)));

	for (int t = 0; t < n_lexemes; t++)
	{
		text	   *lexeme;
		char	   *chars;
		int			n_chars;

		if (lexeme_nulls[t])
			continue;
		lexeme = DatumGetTextPP(lexeme_datums[t]);
		chars = VARDATA_ANY(lexeme);
		n_chars = VARSIZE_ANY_EXHDR(lexeme);
		for (int i = 0; i < tsv->size; i++)
		{
			WordEntry  *entry = &entries[i];

			if (entry->len != (uint32) n_chars || memcmp(strings + entry->pos, chars, n_chars) != 0)
				continue;
			if (entry->haspos)
			{
				double		tf = (double) POSDATALEN(tsv, entry);

				score += idfs[t] * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length)));
			}
			break;
		}
	}
	PG_RETURN_FLOAT8(score);
}
