-- Whether an operator may, from the inbox, approve a call "and from now
-- on" — declare its tool "no approval" in the same act. An operator's
-- power, given by another operator at the console (`toolgate operator add
-- NAME --may-declare`), never taken for granted: every operator that
-- exists when this runs, and every new one, has it not. Read fail-closed:
-- only the integer 1 gives it.
ALTER TABLE operator ADD COLUMN may_declare INTEGER NOT NULL DEFAULT 0
    CHECK (may_declare IN (0, 1));
