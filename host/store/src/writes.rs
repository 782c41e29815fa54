//! Several writes sent as one statement.
//!
//! Inside a transaction every statement is a round trip, and on a busy database the round
//! trips, not the writes, are most of a short transaction's cost. Writes that always go
//! together are joined: each becomes a data-modifying `WITH` part, which PostgreSQL runs
//! exactly once and to completion whether or not anything reads it, all on one snapshot (so
//! no part sees another's rows; foreign keys are checked at the end of the statement).

use sqlx::{PgConnection, Postgres, QueryBuilder};

/// Pushes one `INSERT`, `UPDATE` or `DELETE` (no trailing `;`; `RETURNING` only in a named
/// part).
type Write<'a> = Box<dyn FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a>;

#[derive(Default)]
pub struct Writes<'a> {
    /// Each write, with the name later parts and the final query read it by, if any.
    parts: Vec<(Option<&'static str>, Write<'a>)>,
}

impl<'a> Writes<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn and(mut self, write: impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a) -> Self {
        self.parts.push((None, Box::new(write)));
        self
    }

    /// A write whose `RETURNING` rows the parts after it and the final query read as `name`.
    pub fn named(
        mut self,
        name: &'static str,
        write: impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a,
    ) -> Self {
        self.parts.push((Some(name), Box::new(write)));
        self
    }

    /// Whether a part is named `name`.
    pub fn has(&self, name: &str) -> bool {
        self.parts.iter().any(|(named, _)| *named == Some(name))
    }

    /// `other`'s writes after these.
    pub fn then(mut self, other: Writes<'a>) -> Self {
        self.parts.extend(other.parts);
        self
    }

    /// The one statement: a lone unnamed write as it is, several as `WITH` parts, then
    /// `last` (a query that may read the named parts).
    fn statement(mut self, last: &str) -> QueryBuilder<'a, Postgres> {
        let mut query = QueryBuilder::new("");
        if let [(None, _)] = self.parts.as_slice() {
            let (_, write) = self.parts.remove(0);
            write(&mut query);
            return query;
        }
        for (n, (name, write)) in self.parts.into_iter().enumerate() {
            query.push(if n == 0 { "WITH " } else { ", " });
            match name {
                Some(name) => query.push(format_args!("{name} AS (")),
                None => query.push(format_args!("w{n} AS (")),
            };
            write(&mut query);
            query.push(")");
        }
        query.push(" ").push(last);
        query
    }

    pub async fn execute(self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        if self.parts.is_empty() {
            return Ok(());
        }
        self.execute_ending(conn, "SELECT 1").await
    }

    /// Runs the writes with `last` as the statement's final query, and reads the one row it
    /// returns, if any.
    pub async fn fetch_optional<T>(
        self,
        conn: &mut PgConnection,
        last: &str,
    ) -> Result<Option<T>, sqlx::Error>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
    {
        self.statement(last)
            .build_query_as()
            .fetch_optional(conn)
            .await
    }

    /// Runs the writes with `last` as the statement's final query: an error it raises
    /// undoes every write of the statement.
    pub async fn execute_ending(
        self,
        conn: &mut PgConnection,
        last: &str,
    ) -> Result<(), sqlx::Error> {
        self.statement(last).build().execute(conn).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(writes: Writes<'_>) -> String {
        writes.statement("SELECT 1").into_sql()
    }

    #[test]
    fn one_write_is_sent_as_it_is_several_as_with_parts() {
        let insert = |q: &mut QueryBuilder<'_, Postgres>| {
            q.push("INSERT INTO t (a) VALUES (")
                .push_bind(1_i32)
                .push(")");
        };
        assert_eq!(
            sql(Writes::new().and(insert)),
            "INSERT INTO t (a) VALUES ($1)"
        );
        let update = |q: &mut QueryBuilder<'_, Postgres>| {
            q.push("UPDATE u SET b = ").push_bind(2_i32);
        };
        assert_eq!(
            sql(Writes::new().and(insert).and(update)),
            "WITH w0 AS (INSERT INTO t (a) VALUES ($1)), w1 AS (UPDATE u SET b = $2) SELECT 1"
        );
    }

    #[test]
    fn named_parts_keep_their_names_and_the_final_query_reads_them() {
        let claim = |q: &mut QueryBuilder<'_, Postgres>| {
            q.push("INSERT INTO k (a) VALUES (")
                .push_bind(1_i32)
                .push(") RETURNING 1");
        };
        let update = |q: &mut QueryBuilder<'_, Postgres>| {
            q.push("UPDATE u SET b = ").push_bind(2_i32);
        };
        let writes = Writes::new()
            .named("claimed", claim)
            .then(Writes::new().and(update));
        assert_eq!(
            writes
                .statement("SELECT EXISTS (SELECT 1 FROM claimed)")
                .into_sql(),
            "WITH claimed AS (INSERT INTO k (a) VALUES ($1) RETURNING 1), \
             w1 AS (UPDATE u SET b = $2) SELECT EXISTS (SELECT 1 FROM claimed)"
        );
    }
}
