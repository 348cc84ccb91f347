-- The settings table of 0001 was never read or written: every value it was
-- meant for got a table or a flag of its own.
DROP TABLE settings;
