/* A submitted item shows its answer: only the player is live (listening again changes nothing). */
RatingItem.playerOnly();
