-- A model's newest configurations first: the model feed
-- (/feeds/models/{id}) walks this index down until it has its 50
-- accepted submissions, so its cost follows the 50, not the number of
-- submissions that ever measured the model.
CREATE INDEX configurations_model_recent ON configurations(model, id);
