//! Several writes sent as one statement.
//!
//! Inside a transaction every statement is a round trip, and on a busy database the round
//! trips, not the writes, are most of a short transaction's cost. Writes that always go
//! together are joined: each becomes a data-modifying `WITH` part, which PostgreSQL runs
//! exactly once and to completion whether or not anything reads it, all on one snapshot (so
//! no part sees another's rows; foreign keys are checked at the end of the statement).

use sqlx::{PgConnection, Postgres, QueryBuilder};

/// Pushes one `INSERT`, `UPDATE` or `DELETE` (no `RETURNING`, no trailing `;`).
type Write<'a> = Box<dyn FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a>;

#[derive(Default)]
pub struct Writes<'a> {
    parts: Vec<Write<'a>>,
}

impl<'a> Writes<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn and(mut self, write: impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a) -> Self {
        self.parts.push(Box::new(write));
        self
    }

    /// The one statement: a lone write as it is, several as `WITH` parts.
    fn statement(mut self) -> QueryBuilder<'a, Postgres> {
        let mut query = QueryBuilder::new("");
        if self.parts.len() == 1 {
            let write = self.parts.remove(0);
            write(&mut query);
            return query;
        }
        for (n, write) in self.parts.into_iter().enumerate() {
            query.push(if n == 0 { "WITH " } else { ", " });
            query.push(format_args!("w{n} AS ("));
            write(&mut query);
            query.push(")");
        }
        query.push(" SELECT 1");
        query
    }

    pub async fn execute(self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        if self.parts.is_empty() {
            return Ok(());
        }
        self.statement().build().execute(conn).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(writes: Writes<'_>) -> String {
        writes.statement().into_sql()
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
}
