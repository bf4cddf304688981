"""pipeline layer."""
