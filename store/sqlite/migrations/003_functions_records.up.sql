-- Placeholder until the tables of this group are written.
SELECT 1;
