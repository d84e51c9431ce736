"""The linked account: the profile tool ChatGPT uses to tell several linked accounts apart."""

from app.feature import Feature
from app.features.account.tool import register

FEATURE = Feature(
    name="account",
    instructions="Use `get_account_profile` to tell which of the user's accounts is linked.",
    tools=register,
)
